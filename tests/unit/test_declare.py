"""Declarations: what loads, and the clear errors for what does not."""

from __future__ import annotations

import copy

import pytest
import yaml

from jobs import declare
from jobs.declare.load import pipelines_dir
from jobs.flow.patterns import pattern_of
from jobs.units import parse_duration_s

VALID = {
    "name": "demo_counts",
    "source": {
        "format": "json",
        "schema": {"user_id": "string", "ts": "string", "amount": "double"},
        "required": ["user_id"],
        "event_time": {"column": "ts"},
    },
    "watermark": "10 minutes",
    "window": {"duration": "10 minutes", "slide": "5 minutes"},
    "keys": ["user_id"],
    "aggregates": [{"name": "total", "function": "sum", "column": "amount"}, {"name": "n", "function": "count"}],
    "output": {"format": "parquet", "partition_by": "window_date"},
}


def with_change(path: str, value):
    raw = copy.deepcopy(VALID)
    *parents, last = path.split(".")
    node = raw
    for key in parents:
        node = node[key]
    if value is None:
        del node[last]
    else:
        node[last] = value
    return raw


def test_every_shipped_declaration_loads():
    loaded = declare.load_all()
    assert "clickstream" in loaded
    clickstream = loaded["clickstream"]
    assert clickstream.watermark_s == 300
    assert (clickstream.window.duration_s, clickstream.window.slide_s) == (60, 60)
    assert [key.name for key in clickstream.keys] == ["user_id"]
    assert pattern_of(clickstream).output_columns() == ["window_start", "window_end", "user_id", "event_count"]
    assert clickstream.source.required == ("user_id", "eventtimestamp")


def test_a_valid_declaration_parses():
    spec = declare.from_mapping(VALID)
    assert spec.window.duration_s == 600 and spec.window.slide_s == 300 and not spec.window.is_tumbling
    assert spec.source.required == ("user_id", "ts")  # the event time is always required
    assert spec.source.fields == {"user_id": "string", "ts": "string", "amount": "double"}


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("5 minutes", 300), ("1 minute", 60), ("30s", 30), ("2h", 7200), ("1 day", 86400), ("10 min", 600)],
)
def test_durations(text, seconds):
    assert parse_duration_s(text, "x") == seconds


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        ("watermark", "soon", "not a duration"),
        ("window.duration", "0 minutes", "longer than zero"),
        ("window.duration", 15, "15 has no unit: write '15 seconds' or '15 minutes'"),  # was 15 seconds, silently
        ("window.slide", "20 minutes", "cannot be longer than its duration"),
        ("window.slide", "3 minutes", "multiple of its slide"),
        ("keys", ["country"], "key 'country' is not in the source schema"),
        ("aggregates", [{"name": "x", "function": "median", "column": "amount"}], "is not one of"),
        ("aggregates", [{"name": "x", "function": "sum"}], "sum needs a 'column'"),
        ("aggregates", [], "at least one aggregate"),
        ("source.event_time", {"column": "when"}, "event time column 'when' is not in the source schema"),
        ("source.schema", {"user_id": "varchar", "ts": "string"}, "has type 'varchar'"),
        ("source.format", "xml", "source format 'xml'"),
        ("output.partition_by", "user_id", "may only be 'window_date'"),
        ("name", "Bad Name", "lower-case letters"),
        ("watermark", None, "missing 'watermark'"),
        ("colour", "blue", "unknown setting 'colour'"),
        ("aggregates", [{"name": "user_id", "function": "count"}], "collide"),
        ("airflow", {"retries": -1}, "retries must be a whole number"),
        ("airflow", {"retries": True}, "retries must be a whole number"),
        ("airflow", {"timeout": "forever"}, "not a duration"),
        ("airflow", {"pool": "x"}, "unknown setting 'pool'"),
        ("deduplicate", ["amount"], "must be a required source field"),
        ("deduplicate", "user_id", "is a list of source fields"),
        ("source.new_fields", "rescue", "applies to 'schema: infer'"),
        ("source.schema", "guess", "or be 'infer'"),
        ("enrich", {"table": "users", "path": "u.csv", "key": "country", "columns": ["plan"]}, "key 'country'"),
        ("enrich", {"table": "users", "path": "u.csv", "key": "user_id", "columns": ["amount"]}, "already event"),
        ("enrich", {"table": "users", "path": "u.csv", "key": "user_id", "columns": ["plan"], "format": "xls"}, "xls"),
        ("enrich", {"table": "users", "path": "u.csv", "key": "user_id", "columns": ["p"], "unmatched": "x"}, "keep"),
        ("keys", ["plan"], "key 'plan' is not in the source schema"),
        ("spark", {"driver_memory": "lots"}, "use a number of bytes"),
        ("spark", {"max_bytes_per_trigger": 0}, "must be more than zero"),
        ("spark", {"max_files_per_trigger": 0}, "greater than 0"),
        ("spark", {"state_store": "memory"}, "'hdfs' or 'rocksdb'"),
        ("spark", {"max_files_per_trigger": 5, "max_bytes_per_trigger": "1m"}, "not both"),
        ("spark", {"conf": {"executor.cores": "2"}}, "is not a Spark setting"),
        ("spark", {"conf": {"spark.driver.memory": "2g"}}, "as driver_memory"),
        ("spark", {"conf": {"spark.sql.shuffle.partitions": "8"}}, "state_partitions"),
        ("retention", {"landed": "purge"}, "'keep', 'delete' or 'archive'"),
        ("retention", {"landed": "delete", "landed_after": "soon"}, "not a duration"),
        ("retention", {"output_after": "0 days"}, "longer than zero"),
        ("retention", {"archive_to": "/x"}, "unknown setting 'archive_to'"),
        ("source.event_time", {"column": "ts", "max_future": "soon"}, "not a duration"),
        ("source.max_depth", 0, "greater than or equal to 1"),
        ("source.max_depth", 100_000, "less than or equal to 500"),
    ],
)
def test_invalid_declarations_say_what_is_wrong(path, value, message):
    with pytest.raises(declare.DeclarationError) as error:
        declare.from_mapping(with_change(path, value))
    assert message in str(error.value)


def test_an_event_time_may_be_a_day_in_the_future_by_default_and_any_time_with_none():
    assert declare.load("clickstream").source.event_time.max_future_s == 86400
    assert declare.load("clickstream").source.max_depth == 64
    for off in ("none", None, "None"):
        changed = declare.from_mapping(with_change("source.event_time", {"column": "ts", "max_future": off}))
        assert changed.source.event_time.max_future_s is None
    hour = declare.from_mapping(with_change("source.event_time", {"column": "ts", "max_future": "1 hour"}))
    assert hour.source.event_time.max_future_s == 3600


def test_a_join_key_has_one_type_on_both_sides():
    raw = yaml.safe_load((pipelines_dir() / "ad_clicks.yaml").read_text())
    raw["join"]["source"]["schema"]["ad_id"] = "long"
    with pytest.raises(declare.DeclarationError) as error:
        declare.from_mapping(raw)
    assert "join key 'ad_id' is a string in impressions and a long in clicks" in str(error.value)


def test_pipelines_without_a_window_write_each_event():
    raw = with_change("window", None)
    for setting in ("keys", "aggregates", "watermark"):
        del raw[setting]
    raw["output"]["partition_by"] = "event_date"
    spec = declare.from_mapping(raw)
    assert spec.pattern == "events" and pattern_of(spec).stateful_operators == 0
    assert pattern_of(spec).output_columns() == ["event_time", "user_id", "ts", "amount"]
    with pytest.raises(declare.DeclarationError, match="'keys' needs a 'window'"):
        declare.from_mapping({**raw, "keys": ["user_id"]})
    with pytest.raises(declare.DeclarationError, match="may only be 'event_date'"):
        declare.from_mapping({**raw, "output": {"format": "parquet", "partition_by": "window_date"}})


def test_an_inferred_schema_defers_field_checks_to_the_first_run():
    raw = with_change("source.schema", "infer")
    raw["source"]["new_fields"] = "rescue"
    spec = declare.from_mapping(raw)
    assert spec.source.infer_schema and spec.source.fields == {}
    assert pattern_of(spec).contract()["rescued_data"] is True
    fail = declare.from_mapping({**raw, "source": {**raw["source"], "new_fields": "fail"}})
    ignore = declare.from_mapping({**raw, "source": {**raw["source"], "new_fields": "ignore"}})
    assert pattern_of(fail).contract() == pattern_of(ignore).contract()  # switching these two keeps the checkpoint


def test_an_enrichment_adds_its_columns_and_may_be_aggregated_by():
    enrich = {"table": "users", "path": "users.csv", "format": "csv", "key": "user_id", "columns": ["plan"]}
    spec = declare.from_mapping({**with_change("keys", ["plan"]), "enrich": enrich})
    assert spec.enrich.unmatched == "keep" and [k.name for k in spec.keys] == ["plan"]
    assert pattern_of(spec).contract()["enrich_columns"] == ["plan"]


def test_retention_keeps_everything_unless_declared():
    default = declare.from_mapping(VALID).retention
    assert (default.landed, default.output_after_s) == ("keep", None)
    declared = declare.from_mapping(
        with_change("retention", {"landed": "archive", "landed_after": 0, "output_after": "400d"})
    )
    assert (declared.retention.landed, declared.retention.landed_after_s, declared.retention.output_after_s) == (
        "archive",
        0,
        400 * 86400,
    )


def test_the_airflow_block_is_optional_with_safe_defaults():
    default = declare.from_mapping(VALID).orchestration
    assert (default.retries, default.retry_delay_s, default.timeout_s) == (2, 60, 3600)
    custom = declare.from_mapping(
        with_change("airflow", {"retries": 0, "retry_delay": "5 minutes", "timeout": "2 hours"})
    )
    assert (custom.orchestration.retries, custom.orchestration.retry_delay_s, custom.orchestration.timeout_s) == (
        0,
        300,
        7200,
    )


def test_unknown_pipeline_lists_the_known_ones():
    with pytest.raises(declare.DeclarationError) as error:
        declare.load("nope")
    assert "unknown pipeline 'nope'" in str(error.value) and "clickstream" in str(error.value)


def test_state_contract_ignores_what_a_checkpoint_survives():
    base = declare.from_mapping(VALID)
    other_watermark = declare.from_mapping(with_change("watermark", "1 hour"))
    other_window = declare.from_mapping(with_change("window.duration", "20 minutes"))
    assert pattern_of(base).contract() == pattern_of(other_watermark).contract()
    assert pattern_of(base).contract() != pattern_of(other_window).contract()


def test_each_shipped_declaration_names_its_pattern():
    for path in sorted(pipelines_dir().iterdir(), key=lambda p: p.name):
        if path.name.endswith(".yaml"):
            raw = yaml.safe_load(path.read_text())
            assert raw["pattern"] == declare.load(raw["name"]).pattern, path.name


def test_a_declaration_without_a_pattern_gets_the_one_its_settings_imply():
    assert declare.from_mapping(VALID).pattern == "window"
    assert declare.from_mapping({**VALID, "pattern": "window"}) == declare.from_mapping(VALID)
    with pytest.raises(declare.DeclarationError, match="'keys' needs a 'window'"):
        declare.from_mapping({**VALID, "pattern": "events"})


PROCESS = {
    "name": "racks",
    "pattern": "process",
    "source": {
        "format": "json",
        "schema": {"rack": "string", "t": "double", "ts": "string"},
        "event_time": {"column": "ts"},
    },
    "keys": ["rack"],
    "process": {"processor": "rack_status", "settings": {"column": "t"}},
    "output": {"format": "parquet"},
}


@pytest.mark.parametrize(
    ("process", "message"),
    [
        ({"processor": "rack_stats"}, "process 'rack_stats' is not one of 'rack_status', 'spending_sessions'"),
        (
            {"processor": "rack_status", "settings": {"column": "t", "treshold": 9}},
            r"process settings: unknown setting 'treshold' \(did you mean 'threshold'\?\)",
        ),
        (
            {"processor": "rack_status", "settings": {"column": "t", "readings": 0}},
            "settings readings: Input should be greater than 0",
        ),
        (
            {"processor": "rack_status", "settings": {"column": "temperature"}},
            "processor rack_status input 'temperature' is not in the source schema",
        ),
        (
            {"processor": "spending_sessions", "settings": {"amount": "t", "gap": "soon"}},
            "settings gap: 'soon' is not a duration",
        ),
    ],
)
def test_processor_settings_are_checked_when_the_declaration_loads(process, message):
    with pytest.raises(declare.DeclarationError, match=message):
        declare.from_mapping({**PROCESS, "process": process})
    settings = declare.from_mapping(PROCESS).process.settings
    assert (settings.column, settings.threshold, settings.readings) == ("t", 100, 3)  # defaults filled in


def test_a_processor_with_timeouts_needs_a_watermark():
    sessions = {**PROCESS, "process": {"processor": "spending_sessions", "settings": {"amount": "t"}}}
    with pytest.raises(declare.DeclarationError, match="missing 'watermark'"):
        declare.from_mapping(sessions)
    assert declare.from_mapping({**sessions, "watermark": "10 minutes"}).process.settings.gap_s == 3600


def test_pyspark_and_pyspark_client_are_the_same_release():
    """Both install the same files: a version skew silently breaks one of them."""
    from importlib.metadata import version

    import pyspark

    assert version("pyspark") == version("pyspark-client") == pyspark.__version__


def test_spark_settings_reach_the_session_and_spark_submit_as_spark_conf():
    pipeline = declare.from_mapping(
        with_change(
            "spark",
            {
                "driver_memory": "2g",
                "max_bytes_per_trigger": "128m",
                "state_store": "rocksdb",
                "conf": {"spark.sql.files.maxPartitionBytes": "64m"},
            },
        )
    )
    assert pipeline.spark_settings.max_bytes_per_trigger == 128 * 2**20
    conf = pipeline.spark_settings.session_conf()
    assert conf["spark.driver.memory"] == "2048m" and "spark.executor.memory" not in conf
    assert conf["spark.sql.streaming.stateStore.providerClass"].endswith("RocksDBStateStoreProvider")
    assert conf["spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"] == "true"
    assert conf["spark.sql.files.maxPartitionBytes"] == "64m"
    # The state store is part of the checkpoint's contract: a checkpoint's state is in its store's format.
    assert pattern_of(pipeline).contract()["state_store"] == "rocksdb"
    assert "state_store" not in pattern_of(declare.from_mapping(VALID)).contract()


def test_list_verbose_says_retention_in_the_declaration_s_own_words(tmp_path, monkeypatch, capsys):
    from jobs.cli import main
    from tests.helpers import declaration_copy

    retention = {"landed": "delete", "landed_after": "36 hours", "output_after": "90 minutes"}
    monkeypatch.setenv("JOBS_PIPELINES_DIR", str(declaration_copy(tmp_path, "clickstream", retention=retention)))
    assert main(["list", "-v"]) == 0
    assert (
        "  retention  landed files deleted 36 hours after accounting; output files 90 minutes"
        in capsys.readouterr().out
    )


def test_list_verbose_says_how_a_pipeline_on_arrival_waits(monkeypatch, capsys):
    from jobs.cli import main

    monkeypatch.delenv("JOBS_PIPELINES_DIR", raising=False)
    assert main(["list", "-v"]) == 0
    said = capsys.readouterr().out
    assert "  schedule   on_arrival (quiet 30 seconds, at least every 1 hour)\n" in said
    # Its freshness from its schedule: twice the longest wait between runs.
    assert "  quality    freshness 2 hours (from its schedule); anomalies warn, judged from 8 runs\n" in said


def test_list_verbose_says_a_declared_freshness_and_anomalies(tmp_path, monkeypatch, capsys):
    from jobs.cli import main
    from tests.helpers import declaration_copy

    folder = declaration_copy(tmp_path, "clickstream", freshness="90 minutes", quality={"anomalies": "off"})
    monkeypatch.setenv("JOBS_PIPELINES_DIR", str(folder))
    assert main(["list", "-v"]) == 0
    assert "  quality    freshness 90 minutes; anomalies off\n" in capsys.readouterr().out


def test_a_schema_error_is_in_the_user_s_words_never_pydantic_s():
    """A dotted field name in a declared schema: one line naming it, without pydantic's
    own type names (`dict[function-after[...]]`, `[key]`) or the other branch of the union
    ('infer') that a mapping was never meant to be."""
    source = {**PROCESS["source"], "schema": {"rack": "string", "rack.room": "string", "t": "double", "ts": "string"}}
    with pytest.raises(declare.DeclarationError) as refused:
        declare.from_mapping({**PROCESS, "source": source})
    assert str(refused.value) == "pipeline 'racks' source schema rack.room: 'rack.room' is not a plain column name"


def test_an_inferred_schema_is_outlined_by_its_top_level_fields_in_one_short_line():
    from jobs.flow.source import schema_outline

    nested = {
        "actor": "struct<id:bigint,login:string,avatar:struct<url:string,size:int>>",
        "payload": "struct<commits:array<struct<sha:string,message:string>>,size:bigint>",
        "tags": "array<string>",
        "id": "string",
    }
    assert schema_outline(nested) == "actor {3 fields}, payload {2 fields}, tags [string], id string"
    wide = {f"field_{i}": f"struct<{','.join(f'x{j}:string' for j in range(50))}>" for i in range(400)}
    line = schema_outline(wide)
    assert len(line) < 320 and line.endswith(" more") and line.startswith("field_0 {50 fields}")


NESTED = {
    "name": "activity",
    "source": {
        "format": "json",
        "schema": {
            "type": "string",
            "created_at": "string",
            "repo": {"id": "long", "name": "string"},
            "payload": {"size": "long", "commits": [{"sha": "string", "message": "string"}]},
        },
        "event_time": {"column": "created_at"},
    },
    "watermark": "5 minutes",
    "window": {"duration": "1 minute"},
    "keys": ["type", "repo.name"],
    "aggregates": [{"name": "events", "function": "count"}],
    "output": {"format": "parquet"},
}


def nested_with(path: str, value: object) -> dict:
    raw = copy.deepcopy(NESTED)
    *parents, last = path.split("/")
    inner = raw
    for name in parents:
        inner = inner[name]
    inner[last] = value
    return raw


def test_a_nested_declaration_reads_as_spark_types_with_paths_for_keys():
    pipeline = declare.from_mapping(NESTED)
    assert pipeline.source.fields == {
        "type": "string",
        "created_at": "string",
        "repo": "struct<id:long,name:string>",
        "payload": "struct<size:long,commits:array<struct<sha:string,message:string>>>",
    }
    assert [(k.path, k.name) for k in pipeline.keys] == [("type", "type"), ("repo.name", "repo_name")]
    named = declare.from_mapping(nested_with("keys", ["type", {"repo": "repo.name"}]))
    assert [(k.path, k.name) for k in named.keys] == [("type", "type"), ("repo.name", "repo")]


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (
            "source/schema/repo",
            {"id": "lng", "name": "string"},
            "pipeline 'activity' source schema: field 'repo.id' has type 'lng'; use one of string, long, int, "
            "double, boolean, timestamp, date, decimal(p,s), an object {field: type} or a list [type]",
        ),
        (
            "source/schema/payload",
            {"commits": [{"sha": "str"}]},
            "pipeline 'activity' source schema: field 'payload.commits[].sha' has type 'str'; use one of",
        ),
        ("source/schema/amount", "decimal(40,2)", "field 'amount' has type 'decimal(40,2)'"),
        ("source/schema/tags", ["string", "long"], "field 'tags' has type ['string', 'long']"),
        ("source/schema/repo", {}, "field 'repo' has type {}"),
        ("keys", ["type", "repo.nam"], "pipeline 'activity': key 'repo.nam' is not in the source schema"),
        (
            "keys",
            ["payload.commits.sha"],
            "key 'payload.commits.sha' is inside the array 'payload.commits'; a path goes through objects only",
        ),
        ("keys", ["repo..name"], "'repo..name' is not a field name, or a path to a field inside objects"),
        ("keys", [{"a": "repo.name", "b": "type"}], "a key is a field, a path (repo.name) or a named path"),
        (
            "source/event_time",
            {"column": "repo.created"},
            "event time column 'repo.created' is not in the source schema",
        ),
        ("source/required", ["repo.owner"], "required field 'repo.owner' is not in the source schema"),
        (
            "aggregates",
            [{"name": "n", "function": "sum", "column": "payload.sizes"}],
            "aggregate column 'payload.sizes'",
        ),
        ("deduplicate", ["repo.id"], "deduplicate field 'repo.id' must be a required source field"),
        ("source/hints", {"repo.id": "long"}, "hints apply to 'schema: infer'"),
        ("source/on_type_mismatch", "keep", "on_type_mismatch 'keep' is not one of 'quarantine' or 'rescue'"),
    ],
)
def test_nested_declaration_errors_name_the_path_in_the_user_s_words(path, value, message):
    with pytest.raises(declare.DeclarationError) as refused:
        declare.from_mapping(nested_with(path, value))
    said = str(refused.value)
    assert message in said
    assert not any(word in said for word in ("function-after", "dict[", "[key]", "literal[", "union[")), said


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        ("watermak", "5 minutes", "pipeline 'demo_counts': unknown setting 'watermak' (did you mean 'watermark'?)"),
        ("window", {"duraton": "1 minute"}, "window: unknown setting 'duraton' (did you mean 'duration'?)"),
        ("airflow", {"retires": 3}, "airflow: unknown setting 'retires' (did you mean 'retries'?)"),
        ("source.requried", ["user_id"], "source: unknown setting 'requried' (did you mean 'required'?)"),
        ("keys", ["user"], "pipeline 'demo_counts': key 'user' is not in the source schema (did you mean 'user_id'?)"),
        (
            "aggregates",
            [{"name": "total", "function": "sum", "column": "amont"}],
            "aggregate column 'amont' is not in the source schema (did you mean 'amount'?)",
        ),
        (
            "source.event_time",
            {"column": "tss"},
            "source: event time column 'tss' is not in the source schema (did you mean 'ts'?)",
        ),
        (
            "aggregates",
            [{"name": "n", "function": "cout"}],
            "pipeline 'demo_counts' aggregate 'n' function 'cout' is not one of 'count', 'sum', 'avg', 'min', "
            "'max', 'approx_count_distinct', 'count_if', 'percentile_approx', 'stddev', 'variance', 'min_by' or "
            "'max_by' (did you mean 'count'?)",
        ),
        (
            "pattern",
            "windw",
            "pipeline 'demo_counts' pattern 'windw' is not one of 'window', 'process', 'join', 'events' "
            "(did you mean 'window'?)",
        ),
        ("colour", "blue", "pipeline 'demo_counts': unknown setting 'colour'"),  # spelt like nothing: no guess
    ],
)
def test_a_misspelt_setting_field_or_value_says_the_one_it_is_spelt_like(path, value, message):
    with pytest.raises(declare.DeclarationError) as refused:
        declare.from_mapping(with_change(path, value))
    assert message in str(refused.value)
    assert "did you mean" not in str(refused.value).replace(message, "")  # no guess for anything else


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        ("quality", "warn", "pipeline 'demo_counts' quality: a block of settings (anomalies, min_runs), not 'warn'"),
        (
            "window",
            "10 minutes",
            "pipeline 'demo_counts' window: a block of settings (duration, slide), not '10 minutes'",
        ),
    ],
)
def test_a_word_where_a_block_of_settings_is_meant_names_the_block_s_settings(path, value, message):
    with pytest.raises(declare.DeclarationError) as refused:
        declare.from_mapping(with_change(path, value))
    assert message in str(refused.value)
    assert "valid dictionary" not in str(refused.value)


def test_a_misspelt_nested_path_says_the_path_it_is_spelt_like():
    with pytest.raises(declare.DeclarationError) as refused:
        declare.from_mapping(nested_with("keys", ["type", "repo.nam"]))
    assert str(refused.value) == (
        "pipeline 'activity': key 'repo.nam' is not in the source schema (did you mean 'repo.name'?)"
    )


def test_every_problem_across_parts_is_reported_at_once():
    """Checks across parts (names against the schema, the output's partition): before, the
    first problem alone."""
    raw = with_change("keys", ["user"])
    raw["aggregates"][0]["column"] = "amont"
    raw["output"]["partition_by"] = "event_date"
    raw["rules"] = [{"name": "positive", "check": "amout > 0", "on_violation": "warn"}]
    with pytest.raises(declare.DeclarationError) as refused:
        declare.from_mapping(raw)
    assert str(refused.value).split("; ") == [
        "pipeline 'demo_counts': output partition_by may only be 'window_date' (the UTC date of window_start)",
        "pipeline 'demo_counts': rule 'positive' field 'amout' is not in the source schema (did you mean 'amount'?)",
        "pipeline 'demo_counts': key 'user' is not in the source schema (did you mean 'user_id'?)",
        "pipeline 'demo_counts': aggregate column 'amont' is not in the source schema (did you mean 'amount'?)",
    ]


def test_the_checks_across_parts_are_reported_with_an_unknown_setting_and_a_bad_list_item():
    raw = with_change("keys", ["user"])
    raw["watermak"] = raw.pop("watermark")
    raw["aggregates"] = [*raw["aggregates"], {"name": "m", "function": "median", "column": "amount"}]
    with pytest.raises(declare.DeclarationError) as refused:
        declare.from_mapping(raw)
    assert str(refused.value).split("; ") == [
        "pipeline 'demo_counts': unknown setting 'watermak' (did you mean 'watermark'?)",
        "pipeline 'demo_counts' aggregate 'm' function 'median' is not one of 'count', 'sum', 'avg', 'min', 'max', 'approx_count_distinct', 'count_if', 'percentile_approx', 'stddev', 'variance', 'min_by' or 'max_by'",
        "pipeline 'demo_counts': missing 'watermark' (windows, deduplication, joins and timeouts keep state "
        "until it passes)",
        "pipeline 'demo_counts': key 'user' is not in the source schema (did you mean 'user_id'?)",
    ]


def test_an_unknown_pipeline_says_the_declared_one_it_is_spelt_like():
    with pytest.raises(declare.DeclarationError) as refused:
        declare.load("clikstream")
    assert str(refused.value).startswith("unknown pipeline 'clikstream' (did you mean 'clickstream'?); declared")


def test_every_declaration_that_does_not_load_is_named_at_once(tmp_path, monkeypatch, capsys):
    """`list` (and every command that loads all declarations) names each broken one, with
    each of its problems on a line of its own, and its exit code; `list` names the others."""
    from jobs.cli import main
    from tests.helpers import declaration_copy

    folder = declaration_copy(tmp_path, "clickstream", watermak="5 minutes")
    declaration_copy(folder, "device_steps", keys=["user"])
    declaration_copy(folder, "rack_temperatures")
    monkeypatch.setenv("JOBS_PIPELINES_DIR", str(folder))
    assert main(["list"]) == 2
    said = capsys.readouterr()
    assert said.out == "rack_temperatures\n"
    assert said.err == (
        "error: 2 problems:\n"
        "  pipeline 'clickstream': unknown setting 'watermak' (did you mean 'watermark'?)\n"
        "  pipeline 'device_steps': key 'user' is not in the source schema (did you mean 'user_id'?)\n"
    )


def test_a_folder_of_declarations_that_is_missing_empty_or_misnamed_is_said(tmp_path, monkeypatch, capsys):
    """Found by the newcomer walkthrough: a missing folder ended in exit 1, an empty one (or one
    of .yml files) listed nothing and said nothing."""
    from jobs.cli import main

    monkeypatch.setenv("JOBS_PIPELINES_DIR", str(tmp_path / "nope"))
    assert main(["list"]) == 2
    assert "nope is not a folder of declarations (the folder JOBS_PIPELINES_DIR names)" in capsys.readouterr().err
    assert main(["run", "mine"]) == 2

    monkeypatch.setenv("JOBS_PIPELINES_DIR", str(tmp_path))
    assert main(["list"]) == 0
    assert capsys.readouterr().out.startswith(f"no pipelines are declared in {tmp_path}: each is a <name>.yaml file")

    (tmp_path / "mine.yml").write_text("name: mine\n")
    (tmp_path / "other.YAML").write_text("name: other\n")
    assert main(["list"]) == 2
    said = capsys.readouterr().err
    assert "mine.yml: a declaration is read only from a .yaml file; rename it mine.yaml" in said
    assert "other.YAML: a declaration is read only from a .yaml file; rename it other.yaml" in said


@pytest.mark.parametrize("name", ["event_time", "window_start", "_jobs_line"])
def test_a_declared_field_named_as_a_column_of_the_product_s_is_refused(name):
    raw = copy.deepcopy(VALID)
    raw["source"]["schema"] = {**raw["source"]["schema"], name: "string"}
    with pytest.raises(declare.DeclarationError, match=f"field '{name}' may not be declared"):
        declare.from_mapping(raw)


def test_fields_named_as_the_flow_s_columns_once_were_are_the_producer_s():
    raw = copy.deepcopy(VALID)
    raw["source"]["schema"] = {
        **raw["source"]["schema"],
        "line": "string",
        "source_file": "string",
        "line_number": "long",
    }
    assert {"line", "source_file", "line_number"} <= set(declare.from_mapping(raw).source.fields)


def test_a_declaration_with_yaml_aliases_is_refused_at_once(tmp_path):
    """Under 1 KB of nested aliases stands for billions of nodes: loading one of 686 bytes took
    61 s, and every DAG file loads declarations."""
    import time

    from jobs.declare.load import load_file

    lines = ["name: bomb", "a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{n}: &a{n} [{', '.join([f'*a{n - 1}'] * 9)}]" for n in range(1, 10)]
    lines += ["source: {format: json, schema: *a9}"]
    path = tmp_path / "bomb.yaml"
    path.write_text("\n".join(lines) + "\n")
    started = time.monotonic()
    with pytest.raises(declare.DeclarationError, match=r"YAML aliases \(\*name\) are not taken"):
        load_file(path)
    assert time.monotonic() - started < 1


def test_a_bare_window_duration_is_one_problem_not_two():
    """Before, the undeclared slide (the duration, filled in) was refused too."""
    raw = with_change("window.duration", 15)
    raw["window"].pop("slide", None)
    with pytest.raises(declare.DeclarationError) as error:
        declare.from_mapping(raw)
    assert len(error.value.problems) == 1 and "window duration: 15 has no unit" in error.value.problems[0]


def test_a_key_given_twice_is_refused_naming_its_line(tmp_path):
    """YAML keeps the last of two: a second `output:` made a Parquet pipeline's table Delta."""
    from jobs.declare.load import load_file

    text = (pipelines_dir() / "clickstream.yaml").read_text() + "output:\n  format: delta\n"
    path = tmp_path / "clickstream.yaml"
    path.write_text(text)
    with pytest.raises(declare.DeclarationError, match=rf"line {len(text.splitlines()) - 1}: 'output' is given twice"):
        load_file(path)
