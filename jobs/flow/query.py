"""The whole flow for one pipeline, from landed lines to output rows:

    lines (line, source_file)   one DataFrame per source: a landing's, or a table's rows  jobs/flow/source.py
      -> parse_events          declared fields, event_time, quarantine_reason   parse.py
                               and the declared rules, each record tested        rules.py
      -> enrich                a dimension's columns, when declared             enrich.py
      -> columns, where        the declaration's computed columns; what `where` keeps   expressions.py
      -> usable                the rows a pattern can use, each row counted     parse.py, tally.py
      -> transform             a team's own function, after the watermark        transform.py
      -> the pattern           windows, a processor, a join, or events as they are  patterns/
      -> the sink              appended to the table (Parquet or Delta), exactly once  sink.py

The same functions make the streaming query, the output schema (for validation), and the
accounting's second read of a batch that was not counted as it ran.
"""

from __future__ import annotations

from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery
from pyspark.sql.types import StructType

from jobs.columns import EVENT_TIME, LINE, QUARANTINE_DETAIL, QUARANTINE_REASON, SOURCE_FILE
from jobs.declare import DeclarationError, PipelineBase
from jobs.flow import sink
from jobs.flow.admission import Limits
from jobs.flow.enrich import dimension_key, enrich
from jobs.flow.expressions import filtered, with_computed
from jobs.flow.parse import parse_events, usable
from jobs.flow.patterns import pattern_of
from jobs.flow.source import stream_lines, stream_table
from jobs.flow.tally import Tally, counted
from jobs.request import Trigger


def usable_events(
    pipeline: PipelineBase,
    index: int,
    lines: DataFrame,
    dimension: DataFrame | None,
    tally: Tally | None = None,
    batch_time: Column | None = None,
) -> DataFrame:
    """The lines of source `index` (0: the pipeline's own, 1: a join's second), parsed,
    enriched when the pipeline says so (a join has no enrichment), refused where the pattern
    cannot take them, and the usable ones kept; with a tally, every line is counted in it on
    the way. `batch_time`: the batch's time when a batch is read again (parse.py)."""
    pattern = pattern_of(pipeline)
    source = pattern.sources[index]
    events = parse_events(lines, source, tally, batch_time, pipeline.rules_for(source))
    if pipeline.enrich is not None:
        events = enrich(events, dimension, pipeline.enrich)
    for refused, reason, detail in pattern.refusals():
        newly = F.col(QUARANTINE_REASON).isNull() & refused
        events = events.select(
            *(c for c in events.columns if c not in (QUARANTINE_REASON, QUARANTINE_DETAIL)),
            F.when(newly, F.lit(reason)).otherwise(F.col(QUARANTINE_REASON)).alias(QUARANTINE_REASON),
            F.when(newly, detail).otherwise(F.col(QUARANTINE_DETAIL)).alias(QUARANTINE_DETAIL),
        )
    events = with_computed(events, pipeline.computed_for(index))
    if tally is not None:
        rules = tuple(rule.name for rule in pipeline.rules_for(source))
        transforms = pattern.transforms(index)  # then late as the transform gives them back
        late_at = None if transforms else pattern.late_at(F.col(EVENT_TIME))
        events = counted(events, tally, late_at, rules, filtered(events), transforms, pattern.keys(index))
    return usable(events)


def pipeline_table(
    pipeline: PipelineBase, lines: list[DataFrame], dimension: DataFrame | None = None, tally: Tally | None = None
) -> DataFrame:
    """Landed lines (one DataFrame per source, in checkpoint order) -> output rows."""
    events = [
        usable_events(pipeline, index, source_lines, dimension, tally) for index, source_lines in enumerate(lines)
    ]
    try:
        return pattern_of(pipeline).table(*events, tally=tally)
    except AnalysisException as error:
        if pipeline.transform is None:
            raise
        # The pattern reads what the transform made: a key it did not make is the declaration's.
        first = str(error).strip().splitlines()[0]
        raise DeclarationError(
            f"after transform {pipeline.transform!r}, Spark cannot make the table: {first}"
        ) from None


def output_schema(spark: SparkSession, pipeline: PipelineBase, dimension: DataFrame | None = None) -> StructType:
    """The output table's schema, from the same flow that writes it (run on no rows).
    Without the dimension, its columns are taken as strings (as CSV dimensions have)."""
    no_lines = sink.empty_frame(spark, f"{LINE} string, {SOURCE_FILE} string")
    if pipeline.enrich is not None and dimension is None:
        columns = ", ".join(f"`{c}` string" for c in (dimension_key(pipeline.enrich), *pipeline.enrich.columns))
        dimension = sink.empty_frame(spark, columns)
    sources = pattern_of(pipeline).sources
    return pipeline_table(pipeline, [no_lines] * len(sources), dimension).schema


def start_query(
    spark: SparkSession,
    pipeline: PipelineBase,
    *,
    paths: list[str],
    landings: list[str],
    output: str,
    checkpoint: str,
    trigger: Trigger,
    limits: Limits | None = None,
    dimension: DataFrame | None = None,
    tally: Tally | None = None,
) -> StreamingQuery:
    """Start the streaming query of `pipeline`: each source's landing, as `paths` say what of
    it to list (at most `limits` per batch), the flow (its rows counted in `tally`), the sink."""
    lines = [
        stream_table(spark, path, source, limits) if source.table else stream_lines(spark, path, landing, limits)
        for source, path, landing in zip(pattern_of(pipeline).sources, paths, landings, strict=True)
    ]
    table = pipeline_table(pipeline, lines, dimension, tally)
    retention_s = pipeline.retention.output_after_s
    return sink.start(
        table,
        pipeline.name,
        output,
        checkpoint,
        trigger,
        pipeline.output.partition_by,
        retention_s,
        pipeline.output.format,
    )
