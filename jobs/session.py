"""The SparkSession every command uses, and the Java check that comes before it."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable, Iterator

from pyspark import SparkConf, SparkContext
from pyspark.logger import PySparkLogger
from pyspark.sql import SparkSession

from jobs import executors, jvm
from jobs.flow.source import LINE_LIMIT_SETTING, READ_LIMIT
from jobs.settings import package_file, settings

MIN_JAVA = 17
# Spark's log settings from the JVM's start (package data): warnings to stderr, no INFO flood.
LOG4J_CONFIG = package_file("log4j2.properties")

# The Python workers' daemon when they run this interpreter (a local master): pyspark's own,
# importing pyspark from its package rather than Spark's zip of it (jobs/entry/python_daemon.py).
PYTHON_DAEMON = "jobs.entry.python_daemon"

# Settings every session needs for the runner's results to mean what README says.
BASE_CONF = {
    # Windows, window_date and reports are in UTC whatever the machine's zone.
    "spark.sql.session.timeZone": "UTC",
    "spark.ui.showConsoleProgress": "false",
    "spark.ui.enabled": "false",
    "spark.sql.sources.partitionOverwriteMode": "dynamic",
    # A stop request waits this long for the batch in flight; then the runner ends the JVM.
    # Under a third of the S3 lease (120 s), which a lost lease's stop must fit in.
    "spark.sql.streaming.stopTimeout": "30s",
    # An out-of-memory error in any thread ends the JVM (exit 3), rather than leave it half alive.
    "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile={LOG4J_CONFIG.as_uri()} -XX:+ExitOnOutOfMemoryError",
}


# The jar lock's jars an application needs (s3a's, Delta's), already on every machine that runs
# one of its JVMs (a cluster's nodes hold them at the same path: docs/cluster.md): on the class
# path as they are. Named `spark.jars`, each application copied them into its scratch folder
# (690 MB with the AWS SDK's bundle), and a driver killed before its cleanup left the copy.
# The executors' class path here; the driver's from the same list (driver_class_path).
CLASS_PATH = "spark.executor.extraClassPath"
_LISTS = {"spark.jars": ",", CLASS_PATH: os.pathsep}


class JavaMissing(RuntimeError):
    pass


def java_major_version() -> int:
    """The major version of the java Spark will start (JAVA_HOME first, then PATH)."""
    java_home = os.environ.get("JAVA_HOME")
    java = os.path.join(java_home, "bin", "java") if java_home else shutil.which("java")
    if not java or not os.path.exists(java):
        raise JavaMissing(
            f"Java {MIN_JAVA}+ is required and none was found (JAVA_HOME or PATH); "
            "install one, e.g. `apt-get install openjdk-17-jre-headless`"
        )
    match = re.search(r'version "(\d+)(?:\.(\d+))?', jvm.java_version_text())
    if not match:
        raise JavaMissing(f"could not read the version of {java}; Java {MIN_JAVA}+ is required")
    major = int(match.group(1))
    return int(match.group(2)) if major == 1 and match.group(2) else major


def check_java() -> None:
    major = java_major_version()
    if major < MIN_JAVA:
        raise JavaMissing(f"Java {MIN_JAVA}+ is required, found Java {major}; point JAVA_HOME at a newer one")


def _submitted_master() -> str:
    """The master spark-submit started the JVM with (one of its system properties)."""
    SparkContext._ensure_initialized()  # connects to the gateway spark-submit opened, as getOrCreate would
    return SparkConf().get("spark.master", "local[*]")


def get_spark(
    app_name: str = "jobs", extra_conf: dict[str, str] | None = None, *, new_bytes: int | None = None
) -> SparkSession:
    """The active session, or a new local one. Under spark-submit, its settings win.
    `new_bytes`: how much new input the application will read, when known (jobs/jvm/archive.py)."""
    check_java()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # spark-submit starts the JVM first and hands Python its gateway: its master is the one.
    under_submit = bool(os.environ.get("PYSPARK_GATEWAY_PORT"))
    master = _submitted_master() if under_submit else settings().spark_master
    # Python workers (line parsing, processors) on this machine run this interpreter, not
    # whatever python3 is on PATH; on a cluster, the nodes' own (jobs/executors.py).
    os.environ.setdefault("PYSPARK_PYTHON", executors.executor_python(master))
    own_workers = executors.is_local(master) and os.environ["PYSPARK_PYTHON"] == sys.executable
    builder = SparkSession.builder.appName(app_name)
    log_file = (settings().cache_dir / "logs" / f"{app_name}.log").resolve()
    log_file.parent.mkdir(parents=True, exist_ok=True)
    java_options = f"{BASE_CONF['spark.driver.extraJavaOptions']} -Djobs.log.file={log_file}"
    starts_jvm = not under_submit and SparkContext._gateway is None
    if starts_jvm:  # its console is the log file (_start_jvm): log4j's own console goes quiet
        java_options = f"{java_options} {jvm.start_options(new_bytes)} -Djobs.console.level=off"
    if not under_submit:
        builder = builder.master(master)
    conf = {
        **BASE_CONF,
        **({"spark.python.daemon.module": PYTHON_DAEMON} if own_workers else {}),
        "spark.driver.extraJavaOptions": java_options,
        **(extra_conf or {}),
    }
    conf["spark.jars"] = with_product_jar(conf.get("spark.jars"))
    for key, value in conf.items():
        builder = builder.config(key, value)
    if starts_jvm:
        _start_jvm(master, app_name, conf, log_file)
    return _set_up(builder.getOrCreate(), conf)


def _set_up(spark: SparkSession, conf: dict[str, str]) -> SparkSession:
    """What every session of the product runs with, once it runs."""
    spark.conf.set(LINE_LIMIT_SETTING, str(READ_LIMIT))  # no line held whole past it (jobs/flow/source.py)
    spark.sparkContext.setLogLevel(settings().spark_log_level)
    _for_small_files(spark, conf)
    # PySpark logs every analysis error with its whole plan; the runner reports it in one line.
    for name in ("DataFrameQueryContextLogger", "SQLQueryContextLogger"):
        PySparkLogger.getLogger(name).setLevel(logging.CRITICAL + 1)
    return spark


def _start_jvm(master: str, app_name: str, conf: dict[str, str], log_file) -> None:
    """Start the driver's JVM as getOrCreate would, with what it prints itself (the JDK's
    warnings, Delta's prints, Spark's log lines) going to the log file, not to this process's
    stdout and stderr: the console has the run's own lines. A JVM that does not start says why."""
    from pyspark.errors import PySparkRuntimeError
    from pyspark.java_gateway import launch_gateway

    spark_conf = SparkConf().setMaster(master).setAppName(app_name).setAll(list(conf.items()))
    with open(log_file, "ab") as console, driver_class_path(conf):
        try:
            gateway = launch_gateway(spark_conf, popen_kwargs={"stdout": console, "stderr": console})
        except PySparkRuntimeError:
            said = log_file.read_text(errors="replace").splitlines()[-5:]
            raise RuntimeError(f"the Spark JVM did not start ({log_file}): " + " / ".join(said)) from None
    SparkContext._ensure_initialized(gateway=gateway, conf=spark_conf)


OPEN_COST = "spark.sql.files.openCostInBytes"
LISTING_PARALLELISM = "spark.sql.sources.parallelPartitionDiscovery.parallelism"


def _for_small_files(spark: SparkSession, conf: dict[str, str]) -> None:
    """Many small files (a file per event) cost what their data costs, unless a setting is
    given (`conf`, a declaration's `spark: conf` among it, or spark-submit's --conf):

    - Spark packs files into tasks counting 4 MiB for each file it opens: 100,000 one-line
      files made 3,125 tasks, and a task of the product costs more than a JVM-only one (its
      rows go through Python workers). At 64 KiB a task takes up to 2,000 of them; big
      files are split as before, and every core still gets a task.
    - The file source lists a batch's files again, in a job of one task per file up to
      10,000 (28 s for 20,000 local files on two cores): two tasks per core list them as
      fast, and keep every core listing a bucket.
    """
    given = spark.sparkContext.getConf()
    wanted = {OPEN_COST: str(64 * 2**10), LISTING_PARALLELISM: str(2 * spark.sparkContext.defaultParallelism)}
    for key, value in wanted.items():
        if key not in conf and not given.contains(key):
            spark.conf.set(key, value)


def with_product_jar(jars: str | None) -> str:
    """`spark.jars` with the product's jar first: its decoder and counter (jobs/flow/functions.py)
    run in every JVM of the application, the executors of a cluster included (Spark hands
    it to them)."""
    from jobs.jvm import jars as locked

    built = locked.product_jar()
    if built is not None and jars and jars.split(",")[0] == str(built):
        return jars  # given already (an Application's conf)
    if built is None:
        raise JavaMissing(
            "the product's jar (jobs-jvm) is not built: run `make jvm` (a JDK and Maven), "
            "or install a package that carries it"
        )
    return ",".join([str(built), *([jars] if jars else [])])


def s3a_conf() -> dict[str, str]:
    """Spark's settings for s3a://: hadoop-aws of Spark's own Hadoop and the AWS SDK v2
    modules it uses, from the jar lock (jobs/jvm/jars.py), on the class path (CLASS_PATH),
    and s3a's settings (no secret)."""
    from jobs.lake import s3

    return {CLASS_PATH: _lock_class_path("s3a"), **s3.s3a_settings()}


def table_conf(formats: Iterable[str]) -> dict[str, str]:
    """Spark's settings for the table formats an application writes or reads: none for
    Parquet; for Delta, its jars (the jar lock's, on the class path as for s3a) and its SQL
    extension and catalog (jobs/lake/delta.py). Only where a pipeline's table is Delta."""
    if "delta" not in set(formats):
        return {}
    from jobs.lake import delta

    return {CLASS_PATH: _lock_class_path("delta"), **delta.SESSION_CONF}


def _lock_class_path(used_for: str) -> str:
    """The jar lock's jars used for something, as a class path."""
    from jobs.jvm import jars

    return os.pathsep.join(str(path) for path in jars.paths(used_for))


@contextlib.contextmanager
def driver_class_path(conf: dict[str, str]) -> Iterator[None]:
    """While a driver's JVM starts (ours, or spark-submit's): Delta's jars, then the lock's
    other jars `conf` names, then the product's jar, appended to its class path
    (SPARK_DIST_CLASSPATH: after Spark's own jars). The class archive is made with Spark's and
    Delta's, and a JVM maps it only if its class path begins with those (jvm.archived_jars);
    spark.driver.extraClassPath would come first. The product's jar from the start: its file
    systems (io.triggeronce.jobs.fs) are made in threads of Spark's and Hadoop's own."""
    from jobs.jvm import jars

    archived = jvm.archived_jars()
    wanted = [jar for jar in conf.get(CLASS_PATH, "").split(os.pathsep) if jar and jar not in archived]
    product = jars.product_jar()
    wanted += [str(product)] if product else []
    before = os.environ.get("SPARK_DIST_CLASSPATH")
    os.environ["SPARK_DIST_CLASSPATH"] = os.pathsep.join([p for p in (before, *archived, *wanted) if p])
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("SPARK_DIST_CLASSPATH", None)
        else:
            os.environ["SPARK_DIST_CLASSPATH"] = before


def merged_conf(*confs: dict[str, str]) -> dict[str, str]:
    """Spark settings, later ones winning, but lists of jars joined (s3a's and Delta's)."""
    merged: dict[str, str] = {}
    for conf in confs:
        for key, value in conf.items():
            separator = _LISTS.get(key)
            if separator and merged.get(key):
                listed = merged[key].split(separator)
                value = separator.join([*listed, *(jar for jar in value.split(separator) if jar not in listed)])
            merged[key] = value
    return merged


def check_table_format(spark: SparkSession, table_format: str) -> None:
    """A Delta table needs Delta's extension from the session's start: a session this process
    started earlier without it (for a Parquet pipeline) cannot take it later."""
    from jobs.lake import delta
    from jobs.units import UsageError

    extensions = spark.sparkContext.getConf().get("spark.sql.extensions", "")
    if table_format == "delta" and delta.SESSION_CONF["spark.sql.extensions"] not in extensions:
        raise UsageError(
            "this process's Spark session started without Delta Lake's extension, which a Delta table needs "
            "from the start: run the pipeline in a process of its own, or with the others in one group run"
        )


def heap_bytes(spark: SparkSession) -> int:
    """The most heap the driver's JVM may use (in local mode, the executors' too)."""
    return int(spark.sparkContext._jvm.java.lang.Runtime.getRuntime().maxMemory())


def set_runtime_conf(spark: SparkSession, conf: dict[str, str]) -> None:
    """Set what a running session may change; the rest was set when its JVM started
    (Application.conf(): a session's builder, or spark-submit's --conf)."""
    for key, value in conf.items():
        if spark.conf.isModifiable(key):
            spark.conf.set(key, value)


# What the JVM's exit code says: Spark's own for a task that ran out of memory, and the
# JVM's for -XX:+ExitOnOutOfMemoryError (any other thread that did).
OUT_OF_MEMORY_EXITS = (52, 3)


def dead_jvm_exit_code(wait_s: float = 10.0) -> int | None:
    """The exit code of the Spark JVM this process started, if it died (waiting up to
    `wait_s` for it to finish dying); None while it lives, or when spark-submit started it."""
    from pyspark import SparkContext

    process = getattr(SparkContext._gateway, "proc", None)
    if process is None:
        return None
    try:
        return process.wait(wait_s)
    except subprocess.TimeoutExpired:
        return None


def halt_jvm() -> None:
    """End the Spark JVM at once, without its shutdown hooks, so that it writes nothing more:
    the fence for a run that lost its lease, or that must stop inside a stalled call."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    # PySpark's accumulator server would print a traceback when the JVM's connection drops.
    accumulators = getattr(SparkContext._active_spark_context, "_accumulatorServer", None)
    if accumulators is not None:
        with contextlib.suppress(Exception):
            accumulators.shutdown()
    process = getattr(gateway, "proc", None)
    if process is not None:
        process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(10)
    elif gateway is not None:  # under spark-submit, the JVM is this process's parent
        with contextlib.suppress(Exception):
            gateway.jvm.java.lang.Runtime.getRuntime().halt(1)


def spark_log_file(spark: SparkSession) -> str | None:
    """The file Spark's log, with its stack traces, goes to (jobs/log4j2.properties)."""
    try:
        system = spark.sparkContext._jvm.java.lang.System
        return system.getProperty("jobs.log.file") or f"{system.getProperty('java.io.tmpdir')}/jobs-spark.log"
    except Exception:  # noqa: BLE001 - the JVM is gone: nothing to point at
        return None
