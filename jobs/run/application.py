"""One Spark application, decided in one place: for a set of run requests (one pipeline's
run, a group's) or a command on some pipelines (validate, maintain, rebuild, a backfill's
step), whether Spark starts at all, with how many new bytes (a small increment starts lean:
jobs/jvm/archive.py), and everything its JVM starts with: the pipelines' `spark:` settings
(the largest memory of a group's), s3a's when any of their locations is a bucket, Delta's
when any table is Delta, the product's jar.

The same `Application` starts a session in this process (`session()`: the command line, a
group, a backfill, a rebuild, the warm-up) and gives spark-submit its settings (`conf()` and
`java_options()`: the Airflow operators, jobs/orchestration/operators.py), so the two cannot
drift apart.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pyspark.sql import SparkSession

from jobs.declare import PipelineBase
from jobs.declare.groups import group_spark_conf
from jobs.lake.layout import Locations, is_s3
from jobs.request import RunRequest
from jobs.run.pending import Pending, pending_input


@dataclass(frozen=True)
class Application:
    name: str
    pipelines: tuple[PipelineBase, ...]
    locations: tuple[Locations, ...]  # every location it reads or writes, as Locations say them
    # What each run request would read now; () for a command (Spark starts, new bytes unknown).
    pending: tuple[Pending, ...] = ()
    start_spark: bool = True  # the requests allow it (a task that runs them here: no)
    elsewhere: tuple[str, ...] = ()  # locations outside any pipeline's (a backfill's publish_to)

    @classmethod
    def for_runs(
        cls,
        name: str,
        pipelines: Iterable[PipelineBase],
        requests: Iterable[RunRequest],
        pending: Iterable[Pending] | None = None,
    ) -> Application:
        """The application of these run requests; `pending`: what each would read, when the
        caller has looked already (else it is looked at here)."""
        pipelines, requests = tuple(pipelines), tuple(requests)
        looked = tuple(pending) if pending is not None else tuple(map(pending_input, pipelines, requests))
        locations = tuple(r.locations for r in requests)
        return cls(name, pipelines, locations, looked, all(r.start_spark for r in requests))

    @classmethod
    def for_command(
        cls, name: str, pipelines: Iterable[PipelineBase], locations: Iterable[Locations], elsewhere: Iterable[str] = ()
    ) -> Application:
        return cls(name, tuple(pipelines), tuple(locations), elsewhere=tuple(elsewhere))

    @property
    def needs_spark(self) -> bool:
        """Whether Spark starts: not when every request has nothing new (each runs here)."""
        return self.start_spark and not (self.pending and all(p.nothing_new for p in self.pending))

    @property
    def new_bytes(self) -> int | None:
        """How much new input the application reads; None when only Spark can tell."""
        if not self.pending or any(p.needs_spark for p in self.pending):
            return None
        return sum(p.bytes for p in self.pending)

    @property
    def uses_s3(self) -> bool:
        return any(where.uses_s3 for where in self.locations) or any(map(is_s3, self.elsewhere))

    @property
    def table_formats(self) -> set[str]:
        """The formats of the tables its pipelines write, and of those they read (a Delta upstream)."""
        read = {pipeline.source.table_format for pipeline in self.pipelines} - {None}
        return {pipeline.output.format for pipeline in self.pipelines} | read

    def conf(self) -> dict[str, str]:
        """The settings its JVM starts with (spark-submit's --conf, or a session's builder)."""
        from jobs.session import merged_conf, s3a_conf, table_conf, with_product_jar

        conf = merged_conf(
            group_spark_conf(list(self.pipelines)),
            s3a_conf() if self.uses_s3 else {},  # hadoop-aws from the JVM's start; no secret
            table_conf(self.table_formats),  # Delta's jars, SQL extension and catalog
        )
        return {**conf, "spark.jars": with_product_jar(conf.get("spark.jars"))}

    def java_options(self) -> str:
        """The JVM options of its start: the class archive, and the lean start for a small increment."""
        from jobs import jvm

        return jvm.start_options(self.new_bytes)

    def session(self) -> SparkSession:
        """Its session in this process (started with `conf()`, or the one already running),
        refused when a location would be each executor's own disk or a Delta table meets a
        session started without Delta."""
        from jobs import executors
        from jobs.session import check_table_format, get_spark

        spark = get_spark(self.name, self.conf(), new_bytes=self.new_bytes)
        for table_format in self.table_formats:
            check_table_format(spark, table_format)
        for where in self.locations:
            executors.check_reachable(spark.sparkContext.master, where)
        return spark
