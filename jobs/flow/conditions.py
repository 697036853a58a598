"""The error conditions Spark gives a failed query (`getCondition()`), read from the JVM's
chain of causes: what accounting (a file gone) and failure handling (a record's data)
decide on, never the text of a message alone."""

from __future__ import annotations

from typing import NamedTuple


class Condition(NamedTuple):
    """A Spark error condition (`getCondition()`), its SQLSTATE and its message."""

    name: str
    sql_state: str
    message: str


def spark_conditions(error: BaseException) -> list[Condition]:
    """The error conditions in the JVM's chain of causes of `error`, outermost first (none
    for an error that did not come from the JVM, or when the JVM is gone)."""
    found, throwable = [], getattr(error, "_origin", None)
    try:
        while throwable is not None and len(found) < 20:
            if _is_spark_throwable(throwable):
                condition = throwable.getCondition() or ""
                found.append(Condition(condition, throwable.getSqlState() or "", str(throwable.getMessage())))
            throwable = throwable.getCause()
    except Exception:  # noqa: BLE001 - the JVM is gone: what was found is all there is
        pass
    return found


def _is_spark_throwable(throwable) -> bool:
    from py4j.java_gateway import is_instance_of
    from pyspark import SparkContext

    return is_instance_of(SparkContext._gateway, throwable, "org.apache.spark.SparkThrowable")
