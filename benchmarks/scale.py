"""`make bench`: the product against Spark itself and DuckDB, on a backlog of any size.

    python -m benchmarks.scale [--events 4000000] [--files 400] [--rounds 3] [--only backlog small million ...]

1. Backlog: deterministic clickstream data (benchmarks/clickstream_data.py), then, in
   interleaved rounds on the same files: the product's `python -m jobs run clickstream`
   with its default settings, again without its row rules (what they cost), and again into a
   Delta table (`output: {format: delta}`); a minimal availableNow stream of the same query (JSON source,
   and text + from_json as the product reads); the product and the JSON stream with clickstream
   declared with expressions (two computed columns, a where, a distinct count); a Spark
   batch job; DuckDB (`--only expressions`: the expressions' pair alone, at least 6
   rounds, the order reversed every other round). Per system: median
   wall time, the median of each round's peak memory (the proportional set size of the whole
   process tree, benchmarks/measure.py), rows/s, and the ratios.
2. Nested events: 150,000 real code-host events (benchmarks/github_data.py, GH Archive's as
   templates, about 350 MB) through github_activity and a minimal JSON-source stream with
   the same nested schema, deduplication and windows (benchmarks/references.py).
3. Small files: 100,000 one-line files in 10 dt= folders through the product and the
   minimal JSON stream (as written, and with the product's settings for small files); then
   one new file after them (as a DAG runs it, and with --landing-since) against one new
   file on a fresh root. Then 1,000,000 in 100 dt= folders through the product, and one new
   file after them against one on a fresh root (`--only million`); and a bucket's listing
   of one new day after a year of days (benchmarks/s3_listing.py, `--only s3-listing`).
4. Incremental: the cost of a run with 1 new file after 0, 1,000 and 10,000 processed files.
5. State: state rows over 20 runs of steady input.
6. RocksDB: the backlog run with the RocksDB state store against the default one.
   Sizing: batches sized by what the pipeline keeps (the default) against the default's
   size in every batch, for a processor's open sessions (benchmarks/spending_data.py) and one
   state key per event (clickstream_unique on the backlog); what each run chose.
7. Stages: what each step of the product's flow costs (benchmarks/stages.py).
8. Maintenance: a Delta table made by 200 small runs, before and after `python -m jobs
   maintain` (benchmarks/maintenance.py).
9. Rebuild: the backlog run fresh, then `python -m jobs rebuild` of it with 5-minute
   windows (the plan, the new build's run over every file, the switch).
10. S3: a one-file run with every location in a bucket, its time and its Spark scratch folder
   at its largest; `python -m jobs jars` on an empty cache (benchmarks/s3_run.py).
11. Small Delta runs: one new file into Delta against the same run into Parquet
   (benchmarks/small.py's two variants, interleaved rounds).

Every Spark process gets the same driver memory (--memory, default Spark's own 1g).
Figures, not assertions: README's Performance section quotes what this printed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from benchmarks import github_data, spending_data
from benchmarks.clickstream_data import START, file_lines, generate
from benchmarks.measure import REPO, Measured, gib, measure
from jobs.session import LISTING_PARALLELISM, OPEN_COST

WORK = REPO / "data" / "bench"
PY = sys.executable


_PRODUCT = [PY, "-m", "jobs", "run", "clickstream", "--no-validate"]


def _product(root: Path, landing: Path, env: dict[str, str] | None = None) -> Measured:
    return measure([*_PRODUCT, "--root", str(root), "--landing", str(landing)], env=env)


def _reference(
    system: str,
    data: Path,
    output: Path,
    memory: str,
    max_bytes: int | None,
    *conf: str,
    resume: bool = False,
    expressions: bool = False,
) -> Measured:
    """A reference system (benchmarks/references.py); a stream with Spark settings `conf`,
    or going on from its checkpoint in `output` (`resume`), or with the declared expressions."""
    command = [PY, "-m", "benchmarks.references", system, str(data), str(output), "--memory", memory]
    command += ["--max-bytes", str(max_bytes)] if max_bytes else []
    command += ["--resume"] if resume else []
    return measure(command + [f"--conf={setting}" for setting in conf] + (["--expressions"] if expressions else []))


def _checked(name: str, result: Measured) -> Measured:
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-15:])
        raise SystemExit(f"{name} failed (exit {result.returncode}):\n{tail}")
    return result


def _product_cap(root: Path, pipeline: str = "clickstream") -> int:
    """The batch size the product chose by default for its first batch (its run report says), for
    the streams to take in every batch: the product's later batches are sized (`sizing`)."""
    (report,) = (root / "runs" / pipeline).glob("*.json")
    return json.loads(report.read_text())["batch_limits"]["max_bytes"]


def backlog(events: int, files: int, rounds: int, memory: str) -> dict[str, list[Measured]]:
    data = generate(WORK / f"landing-{events}-{files}", events, files)
    print(f"backlog: {events:,} events in {files} files, {_size(data) / 2**20:.0f} MiB, {rounds} round(s)")
    out = WORK / "out"
    # The streams take batches of the size the product chose; the product runs first in each round.
    unruled = _without_rules(WORK / "unruled")
    as_delta = _as_delta(WORK / "delta")
    pair = _pair(data, out, memory, lambda: _product_cap(out / "product"))
    systems = {
        "product": pair["product"],
        # The same run with the declaration's row rules left out: what the rules cost.
        "product, no rules": lambda: _product(
            out / "unruled", data, env={"SPARK_DRIVER_MEMORY": memory, "JOBS_PIPELINES_DIR": str(unruled)}
        ),
        # The same run into a Delta table.
        "product, delta": lambda: _product(
            out / "delta", data, env={"SPARK_DRIVER_MEMORY": memory, "JOBS_PIPELINES_DIR": str(as_delta)}
        ),
        "stream (json)": pair["stream"],
        # The same run declared with expressions, and the stream with the same ones.
        "product, expressions": pair["product, expressions"],
        "stream, expressions": pair["stream, expressions"],
        "stream (text)": lambda: _reference("stream-text", data, out / "text", memory, _product_cap(out / "product")),
        "batch": lambda: _reference("batch", data, out / "batch", memory, None),
    }
    try:
        import duckdb  # noqa: F401

        systems["duckdb"] = lambda: _reference("duckdb", data, out / "duckdb", memory, None)
    except ImportError:
        print("  (DuckDB is not installed: left out)")
    results: dict[str, list[Measured]] = {name: [] for name in systems}
    for round_number in range(rounds):
        shutil.rmtree(out, ignore_errors=True)
        order = list(systems)
        if round_number % 2:  # the two product runs take turns going first
            order[:2] = order[1::-1]
        for name in order:
            result = _checked(name, systems[name]())
            results[name].append(result)
            print(
                f"  round {round_number + 1}: {name:18} {result.seconds:7.1f} s  {gib(result.peak_memory)}", flush=True
            )
    print(f"  the streams took batches of about {_product_cap(out / 'product') / 2**20:.0f} MiB, the product's first")
    print(f"  the product: {_batch_sizes(out / 'product', 'clickstream')}")
    return results


def expressions(events: int, files: int, rounds: int, memory: str) -> None:
    """Issue 72's pair on its own, with more rounds than the backlog's: the product and Spark's
    minimal stream, each with and without the declared expressions (`_with_expressions`), the
    order reversed every other round so that a machine's drift falls on each alike. The streams
    take every batch at the product's first batch size; with the expressions the product's
    sized batches stay at that size too (their distinct counts' state is over its budget)."""
    data = generate(WORK / f"landing-{events}-{files}", events, files)
    out = WORK / "out-expressions"
    cap: list[int] = []  # the product's first batch size, read after its first run
    systems = _pair(data, out, memory, lambda: cap[0])
    print(f"\nexpressions: {events:,} events in {files} files, {rounds} round(s)")
    seconds: dict[str, list[float]] = {name: [] for name in systems}
    for round_number in range(rounds):
        shutil.rmtree(out, ignore_errors=True)
        order = list(systems)[:: -1 if round_number % 2 else 1]  # the product first in round 1: its cap
        for name in order:
            seconds[name].append(_checked(name, systems[name]()).seconds)
            if not cap:
                cap.append(_product_cap(out / "product"))
        plain, declared_ratio = (
            seconds["product"][-1] / seconds["stream"][-1],
            seconds["product, expressions"][-1] / seconds["stream, expressions"][-1],
        )
        times = "  ".join(f"{name} {seconds[name][-1]:.1f} s" for name in systems)
        print(f"  round {round_number + 1}: {times}; ratios {plain:.2f} without, {declared_ratio:.2f} with", flush=True)
    medians = {name: statistics.median(runs) for name, runs in seconds.items()}
    without = medians["product"] / medians["stream"]
    with_them = medians["product, expressions"] / medians["stream, expressions"]
    print(
        f"  medians: {', '.join(f'{name} {medians[name]:.1f} s' for name in systems)}\n"
        f"  product / stream: {with_them:.3f} with the expressions, {without:.3f} without ({with_them - without:+.3f})"
    )
    print(f"  the product: {_batch_sizes(out / 'product', 'clickstream')}")
    print(f"  with the expressions: {_batch_sizes(out / 'expressions', 'clickstream')}")


def _pair(data: Path, out: Path, memory: str, cap: Callable[[], int]) -> dict[str, Callable[[], Measured]]:
    """Issue 72's pair: the product and Spark's minimal stream, each without and with the
    declared expressions (`_with_expressions`), at `memory`; the streams take every batch at
    `cap()`, the product's first batch size (known once the product ran)."""
    env = {"SPARK_DRIVER_MEMORY": memory}
    declared = {**env, "JOBS_PIPELINES_DIR": str(_with_expressions(WORK / "expressions"))}
    return {
        "product": lambda: _product(out / "product", data, env),
        "stream": lambda: _reference("stream", data, out / "stream", memory, cap()),
        "product, expressions": lambda: _product(out / "expressions", data, declared),
        "stream, expressions": lambda: _reference("stream", data, out / "stream-expr", memory, cap(), expressions=True),
    }


def _without_rules(folder: Path) -> Path:
    """A pipelines folder with clickstream as shipped but for its row rules."""
    import yaml

    from jobs.declare.load import pipelines_dir

    declaration = yaml.safe_load((pipelines_dir() / "clickstream.yaml").read_text())
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "clickstream.yaml").write_text(yaml.safe_dump({k: v for k, v in declaration.items() if k != "rules"}))
    return folder


def _as_delta(folder: Path) -> Path:
    """A pipelines folder with clickstream as shipped but for its table: Delta."""
    import yaml

    from jobs.declare.load import pipelines_dir

    declaration = yaml.safe_load((pipelines_dir() / "clickstream.yaml").read_text())
    declaration["output"] = {**declaration["output"], "format": "delta"}
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "clickstream.yaml").write_text(yaml.safe_dump(declaration))
    return folder


def _with_expressions(folder: Path) -> Path:
    """A pipelines folder with clickstream declared with expressions (issue 72's bench): two
    computed columns, a where, the key over one and a distinct count over the other."""
    import yaml

    from jobs.declare.load import pipelines_dir

    declaration = yaml.safe_load((pipelines_dir() / "clickstream.yaml").read_text())
    declaration |= {
        "columns": {"user": "lower(user_id)", "kind": "upper(event)"},
        "where": "event <> 'scroll'",
        "keys": ["user"],
        "aggregates": [
            {"name": "event_count", "function": "count"},
            {"name": "kinds", "function": "approx_count_distinct", "column": "kind"},
        ],
    }
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "clickstream.yaml").write_text(yaml.safe_dump(declaration))
    return folder


def _with_window(folder: Path, duration: str) -> Path:
    """A pipelines folder with clickstream as shipped but for its window's duration."""
    import yaml

    from jobs.declare.load import pipelines_dir

    declaration = yaml.safe_load((pipelines_dir() / "clickstream.yaml").read_text())
    declaration["window"] = {"duration": duration}
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "clickstream.yaml").write_text(yaml.safe_dump(declaration))
    return folder


def rebuild(events: int, files: int, memory: str) -> None:
    """A rebuild of the backlog against a fresh run of it, one after the other."""
    data = generate(WORK / f"landing-{events}-{files}", events, files)
    root = WORK / "rebuild"
    shutil.rmtree(root, ignore_errors=True)
    (root / "landing").mkdir(parents=True)
    (root / "landing" / "clickstream").symlink_to(data)  # the build's landing is the root's
    env = {"SPARK_DRIVER_MEMORY": memory}
    fresh = _checked("the fresh run", measure([*_PRODUCT, "--root", str(root)], env=env))
    changed = {**env, "JOBS_PIPELINES_DIR": str(_with_window(WORK / "five-minutes", "5 minutes"))}
    command = [PY, "-m", "jobs", "rebuild", "clickstream", "--root", str(root), "--id", "five-minutes"]
    rebuilt = _checked("the rebuild", measure(command, env=changed))
    print(
        f"rebuild: {events:,} events, 1-minute windows rebuilt as 5-minute ones: {rebuilt.seconds:.1f} s "
        f"(the plan, the new build's run over every file, the switch) against a fresh run of the backlog "
        f"{fresh.seconds:.1f} s: {rebuilt.seconds / fresh.seconds:.2f}x; peak memory {gib(rebuilt.peak_memory)} "
        f"against {gib(fresh.peak_memory)}"
    )


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.glob("*.json"))


def print_backlog(results: dict[str, list[Measured]], events: int) -> None:
    medians = {name: statistics.median(r.seconds for r in runs) for name, runs in results.items()}
    peaks = {name: statistics.median(r.peak_memory for r in runs) for name, runs in results.items()}
    rss = {name: statistics.median(r.peak_rss for r in runs) for name, runs in results.items()}
    print(f"\n{'system':20}{'median wall':>12}{'peak PSS':>14}{'(RSS summed)':>14}{'rows/s':>12}")
    for name in results:
        print(
            f"{name:20}{medians[name]:>10.1f} s{gib(peaks[name]):>14}{gib(rss[name]):>14}{events / medians[name]:>12,.0f}"
        )
    for name in medians:
        if name != "product":
            print(f"product / {name}: {medians['product'] / medians[name]:.2f}")
    if "product, delta" in medians:
        print(f"product, delta / product (parquet): {medians['product, delta'] / medians['product']:.2f}")
    if "product, expressions" in medians:
        with_them = medians["product, expressions"] / medians["stream, expressions"]
        without = medians["product"] / medians["stream (json)"]
        print(
            f"with expressions, product / stream: {with_them:.2f} (without them {without:.2f}: "
            f"{with_them - without:+.2f}); peak memory "
            f"{peaks['product, expressions'] / peaks['stream, expressions']:.2f}"
        )
    for name in ("stream (json)", "stream (text)"):
        memory, summed = peaks["product"] / peaks[name], rss["product"] / rss[name]
        print(f"peak memory, product / {name}: {memory:.2f} ({summed:.2f} with RSS summed)")


def _land(folder: Path, number: int, lines: int, start: datetime, users: int = 100) -> None:
    """One small file of steady input: `lines` events over the minute after `start`."""
    records = [
        {
            "event_id": f"s{number}-{i}",
            "user_id": f"user{i % users}",
            "event": "click",
            "eventtimestamp": (start + timedelta(seconds=60 * i / lines)).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        }
        for i in range(lines)
    ]
    (folder / f"steady-{number:06d}.json").write_text("".join(json.dumps(r) + "\n" for r in records))


def small_files(folder: Path, count: int = 100_000, folders: int = 10) -> Path:
    """`count` one-line files of clickstream events in `folders` dt= folders (skipped when
    there): a producer that lands a file per event. Modification times a second apart."""
    done = folder / "_COMPLETE"
    if done.exists():
        return folder
    rng = random.Random(7)
    first = START.timestamp()
    for number in range(count):
        day = START.date() - timedelta(days=START.day - 1) + timedelta(days=number * folders // count)
        path = folder / f"dt={day.isoformat()}" / f"event-{number:07d}.json"
        if number * folders % count < folders:
            path.parent.mkdir(parents=True, exist_ok=True)
        (line,) = file_lines(number, count, 1, 10_000, rng)
        path.write_text(line + "\n")
        os.utime(path, (first + number, first + number))
    done.write_text(json.dumps({"files": count, "folders": folders}))
    return folder


def _linked(source: Path, copy: Path) -> Path:
    """A copy of `source` made of hard links (new files land in the copy, not the source)."""
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(source, copy, copy_function=os.link)
    return copy


# What the product sets for small files on local[2] (jobs/session.py), given to the tuned stream too.
SMALL_FILE_CONF = (f"{OPEN_COST}={64 * 2**10}", f"{LISTING_PARALLELISM}={2 * 2}")


def many_small(count: int, memory: str, rounds: int = 3) -> None:
    """`count` one-line files through the product and the minimal JSON stream (as written,
    and with the product's settings for small files); then, in `rounds` interleaved rounds,
    one new file after them, and on a fresh root, for each (medians)."""
    print(f"\nsmall files: {count:,} one-line files in 10 dt= folders")
    out = WORK / "out-small"
    shutil.rmtree(out, ignore_errors=True)
    landing = _linked(small_files(WORK / f"small-{count}", count), out / "landing")
    own = {"product": landing, "stream (json)": _linked(landing, out / "stream-landing")}  # where each lands more
    env = {"SPARK_DRIVER_MEMORY": memory}

    def stream(name: str, data: Path, *conf: str, resume: bool = False) -> Measured:
        return _checked(
            f"the stream {name}", _reference("stream", data, out / name, memory, None, *conf, resume=resume)
        )

    runs = {
        "product": _checked("the product over the small files", _product(out / "product", landing, env)),
        "stream (json)": stream("stream", own["stream (json)"]),
        "stream (json), small-file settings": stream("tuned", landing, *SMALL_FILE_CONF),
    }
    for name, run in runs.items():
        print(f"  {name:36} {run.seconds:7.1f} s  {gib(run.peak_memory)}", flush=True)
    for name in list(runs)[1:]:
        print(f"  product / {name}: {runs['product'].seconds / runs[name].seconds:.2f}")

    one_new_file_after(count, landing, own, out, env, stream, rounds)


def _new_day(landing: Path) -> str:
    """The dt= folder of the day after the landing's last."""
    last = max(date.fromisoformat(p.name.removeprefix("dt=")) for p in landing.glob("dt=*"))
    return f"dt={last + timedelta(days=1)}"


def one_new_file_after(count: int, landing: Path, own: dict, out: Path, env: dict, stream, rounds: int) -> None:
    """In `rounds` interleaved rounds, one new file (in a new day) after `count` processed
    files, and on a fresh root, by the product (and by the stream, when `stream` is given)."""
    print(f"  one new file after the {count:,} (median of {rounds}), against one on a fresh root:")
    new_day = _new_day(landing)
    later = datetime.combine(date.fromisoformat(new_day.removeprefix("dt=")), datetime.min.time(), UTC)
    since = [*_PRODUCT, "--root", str(out / "product"), "--landing", str(landing), "--landing-since", new_day[3:]]
    runs = {
        "product": lambda: _product(out / "product", landing, env),
        "product --landing-since": lambda: measure(since, env=env),
    }
    if stream is not None:
        runs["stream (json)"] = lambda: stream("stream", own["stream (json)"], resume=True)
    after: dict[str, list[float]] = {name: [] for name in runs}
    fresh: dict[str, list[float]] = {"product": [], "stream (json)": []} if stream else {"product": []}
    for number in range(rounds):
        for name, run in runs.items():
            new = own[name.split(" --")[0]] / new_day
            new.mkdir(exist_ok=True)
            landed = len(list(new.iterdir()))
            _land(new, landed, 10, later + timedelta(minutes=landed))
            after[name].append(_checked(f"{name} after them", run()).seconds)
        alone = out / f"fresh-{number}"
        shutil.rmtree(alone, ignore_errors=True)
        (alone / "landing" / new_day).mkdir(parents=True)
        _land(alone / "landing" / new_day, 0, 10, later)
        fresh["product"].append(_checked("the product, fresh", _product(alone, alone / "landing", env)).seconds)
        if stream is not None:
            fresh["stream (json)"].append(stream(f"fresh-{number}/stream", alone / "landing").seconds)
    for name, seconds in after.items():
        base = statistics.median(fresh[name.split(" --")[0]])
        ratio = statistics.median(seconds) / base
        print(
            f"  {name:24} after {count:,}: {statistics.median(seconds):5.1f} s, fresh: {base:5.1f} s, ratio {ratio:.2f}"
        )


def a_million_small(count: int, memory: str, rounds: int = 3) -> None:
    """`count` one-line files in 100 dt= folders through the product once, then one new file
    after them against one on a fresh root (the product alone: what its file log costs)."""
    print(f"\nsmall files: {count:,} one-line files in 100 dt= folders, the product alone")
    out = WORK / "out-million"
    shutil.rmtree(out, ignore_errors=True)
    landing = _linked(small_files(WORK / f"small-{count}", count, folders=100), out / "landing")
    env = {"SPARK_DRIVER_MEMORY": memory}
    first = _checked("the product over the small files", _product(out / "product", landing, env))
    print(f"  product, the first run over them {first.seconds:7.1f} s  {gib(first.peak_memory)}", flush=True)
    one_new_file_after(count, landing, {"product": landing}, out, env, None, rounds)


def incremental(sizes: tuple[int, ...] = (0, 1_000, 10_000)) -> None:
    """A run with one new file after `size` processed ones: what listing and the logs cost."""
    print("\nincremental: one new file after N processed files")
    start = datetime(2023, 7, 30, tzinfo=UTC)
    for size in sizes:
        root, landing = WORK / f"incremental-{size}", WORK / f"incremental-{size}" / "landing"
        shutil.rmtree(root, ignore_errors=True)
        landing.mkdir(parents=True)
        for number in range(size):
            _land(landing, number, 10, start + timedelta(seconds=number))
        if size:
            setup = _checked(f"processing {size} files", _product(root, landing))
            print(f"  {size:>6} files processed first in {setup.seconds:.1f} s")
        _land(landing, size, 10, start + timedelta(seconds=size + 600))
        result = _checked("the run with one new file", _product(root, landing))
        print(f"  after {size:>6} files: {result.seconds:6.1f} s, {gib(result.peak_memory)}", flush=True)


def state(runs: int = 20) -> None:
    """State rows after each of `runs` runs, each landing the next 10 minutes of steady input."""
    print(f"\nstate rows over {runs} runs of steady input (100 users, 10 minutes of events per run)")
    root = WORK / "state"
    shutil.rmtree(root, ignore_errors=True)
    landing = root / "landing"
    landing.mkdir(parents=True)
    start = datetime(2023, 7, 30, tzinfo=UTC)
    rows = []
    for number in range(runs):
        for minute in range(10):
            _land(landing, number * 10 + minute, 600, start + timedelta(minutes=number * 10 + minute))
        _checked(f"run {number + 1}", _product(root, landing))
        reports = sorted((root / "runs" / "clickstream").glob("*.json"))
        rows.append(json.loads(reports[-1].read_text())["state_rows"])
    print(f"  state rows after each run: {rows}")
    print(f"  largest in the first half {max(rows[: runs // 2])}, in the second half {max(rows[runs // 2 :])}")


def rocksdb(events: int, files: int, memory: str) -> None:
    """The key-heavy backlog run with each state store (the declaration's spark: state_store)."""
    import yaml

    from jobs.declare.load import pipelines_dir

    data = generate(WORK / f"landing-{events}-{files}", events, files)
    print(f"\nstate store on the backlog ({events:,} events, about one key per event)")
    declaration = yaml.safe_load((pipelines_dir() / "clickstream.yaml").read_text())
    for store in ("hdfs", "rocksdb"):
        root = WORK / f"store-{store}"
        shutil.rmtree(root, ignore_errors=True)
        (root / "pipelines").mkdir(parents=True)
        sized = {**declaration, "spark": {"state_store": store}}
        (root / "pipelines" / "clickstream.yaml").write_text(yaml.safe_dump(sized))
        env = {"SPARK_DRIVER_MEMORY": memory, "JOBS_PIPELINES_DIR": str(root / "pipelines")}
        result = _checked(f"the {store} run", _product(root, data, env=env))
        print(f"  {store:8} {result.seconds:7.1f} s  {gib(result.peak_memory)}", flush=True)


def _batch_sizes(root: Path, pipeline: str) -> str:
    """What the product's last run in `root` chose for its batches (its report's batch_sizes)."""
    from jobs.flow.admission import BatchSize, describe_sizes

    report = json.loads(sorted((root / "runs" / pipeline).glob("*.json"))[-1].read_text())
    sizes = [BatchSize(**size) for size in report["batch_sizes"]]
    return f"{report['batches']} batches; " + (describe_sizes(sizes, report["batch_limits"]) if sizes else "none sized")


def sizing(events: int, files: int, memory: str) -> None:
    """Sized batches (the default) against the default's size for every batch, where memory is
    at stake: a processor's open sessions (spending_sessions: 1 M transactions of 100,000
    users), and one state key per event (clickstream_unique: deduplicated by event id, on the
    backlog). The clickstream backlog itself is the backlog section's."""
    cases = {
        "spending_sessions": spending_data.generate(WORK / "spending-1000000"),
        "clickstream_unique": generate(WORK / f"landing-{events}-{files}", events, files),
    }
    print(f"\nbatches sized by what the pipeline keeps, at {memory} (sized, then every batch at the default's size)")
    env = {"SPARK_DRIVER_MEMORY": memory}
    for pipeline, data in cases.items():
        command = [PY, "-m", "jobs", "run", pipeline, "--no-validate", "--landing", str(data)]
        root = WORK / "sizing" / pipeline
        shutil.rmtree(root.parent, ignore_errors=True)
        sized = _checked(f"{pipeline}, sized", measure([*command, "--root", str(root / "sized")], env=env))
        print(
            f"  {pipeline:18} sized  {sized.seconds:7.1f} s  {gib(sized.peak_memory)}  {_batch_sizes(root / 'sized', pipeline)}"
        )
        floor = _product_cap(root / "sized", pipeline)
        fixed_command = [*command, "--root", str(root / "fixed"), "--max-bytes-per-trigger", str(floor)]
        fixed = _checked(f"{pipeline}, fixed", measure(fixed_command, env=env))
        print(
            f"  {pipeline:18} fixed  {fixed.seconds:7.1f} s  {gib(fixed.peak_memory)}  {_batch_sizes(root / 'fixed', pipeline)}"
        )


def nested(events: int, rounds: int, memory: str) -> None:
    """Real nested events (benchmarks/github_data.py): github_activity against a minimal
    JSON-source stream with the same nested schema, deduplication and windows."""
    data = github_data.generate(WORK / f"github-{events}", events)
    print(
        f"\nnested events: {events:,} real code-host events in {len(list(data.glob('*.json')))} files, "
        f"{_size(data) / 2**20:.0f} MiB, {rounds} round(s)"
    )
    out = WORK / "out-github"
    command = [PY, "-m", "jobs", "run", "github_activity", "--no-validate", "--root", str(out / "product")]
    systems = {
        "product": lambda: measure([*command, "--landing", str(data)], env={"SPARK_DRIVER_MEMORY": memory}),
        "stream (json)": lambda: _reference(
            "stream-github", data, out / "stream", memory, _product_cap(out / "product", "github_activity")
        ),
    }
    results: dict[str, list[Measured]] = {name: [] for name in systems}
    for round_number in range(rounds):
        shutil.rmtree(out, ignore_errors=True)
        for name, run in systems.items():
            result = _checked(name, run())
            results[name].append(result)
            print(
                f"  round {round_number + 1}: {name:14} {result.seconds:7.1f} s  {gib(result.peak_memory)}", flush=True
            )
    (report,) = (out / "product" / "runs" / "github_activity").glob("*.json")
    product_rows = json.loads(report.read_text())["output_rows"]
    stream_rows = json.loads(results["stream (json)"][-1].stdout.strip().splitlines()[-1])["output_rows"]
    medians = {name: statistics.median(r.seconds for r in runs) for name, runs in results.items()}
    peaks = {name: max(r.peak_memory for r in runs) for name, runs in results.items()}
    print(f"  rows written: product {product_rows:,}, stream {stream_rows:,}")
    print(
        f"  product / stream (json): {medians['product'] / medians['stream (json)']:.2f} in time, "
        f"{peaks['product'] / peaks['stream (json)']:.2f} in peak memory"
    )


def stages(events: int, files: int, memory: str) -> None:
    """What each step of the flow costs, on the backlog's files (its own Spark application)."""
    data = generate(WORK / f"landing-{events}-{files}", events, files)
    print(_checked("the stages", measure([PY, "-m", "benchmarks.stages", str(data), "--memory", memory])).stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=4_000_000)
    parser.add_argument("--files", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--memory", default="1g", help="driver memory of every Spark process (default: %(default)s)")
    parser.add_argument(
        "--only",
        nargs="+",
        metavar="PART",
        help="run these parts only, in the order below (default: every part)",
        choices=(
            "backlog",
            "nested",
            "small",
            "incremental",
            "state",
            "rocksdb",
            "stages",
            "maintenance",
            "rebuild",
            "s3",
            "small-delta",
            "million",
            "s3-listing",
            "sizing",
            "history",
            "expressions",
        ),
    )
    args = parser.parse_args()

    def wanted(part: str) -> bool:
        return args.only is None or part in args.only

    WORK.mkdir(parents=True, exist_ok=True)
    if wanted("backlog"):
        print_backlog(backlog(args.events, args.files, args.rounds, args.memory), args.events)
    if args.only and "expressions" in args.only:  # the backlog's pair again, more rounds: asked for by name
        expressions(args.events, args.files, max(args.rounds, 6), args.memory)
    if wanted("nested"):
        nested(150_000, args.rounds, args.memory)
    if wanted("small"):
        many_small(100_000, args.memory, args.rounds)
    if wanted("million"):
        a_million_small(1_000_000, args.memory, args.rounds)
    if wanted("s3-listing"):
        print(
            _checked(
                "the S3 listing", measure([PY, "-m", "benchmarks.s3_listing", "--rounds", str(args.rounds)])
            ).stdout
        )
    if wanted("incremental"):
        incremental()
    if wanted("state"):
        state()
    if wanted("rocksdb"):
        rocksdb(args.events, args.files, args.memory)
    if wanted("sizing"):
        sizing(args.events, args.files, args.memory)
    if wanted("stages"):
        stages(args.events, args.files, args.memory)
    if wanted("maintenance"):
        print(_checked("maintenance", measure([PY, "-m", "benchmarks.maintenance"])).stdout)
    if wanted("rebuild"):
        rebuild(args.events, args.files, args.memory)
    if wanted("s3"):
        command = [PY, "-m", "benchmarks.s3_run", "--rounds", str(args.rounds)]
        print(_checked("the S3 run", measure(command)).stdout)
    if wanted("history"):
        print(_checked("the history", measure([PY, "-m", "benchmarks.history", "--rounds", str(args.rounds)])).stdout)
    if wanted("small-delta"):
        rounds = str(max(args.rounds, 5))  # runs of 5 s: more rounds for a steady median
        command = [PY, "-m", "benchmarks.small", "--rounds", rounds, "--only", "one new file", "one new file, delta"]
        print("\nsmall runs into Delta and Parquet:\n" + _checked("the small runs", measure(command)).stdout)


if __name__ == "__main__":
    main()
