"""The layout under one root, and how a location is written (local path or s3a:// URI).

The layout (the product's contract, see README "Data layout"):
    <root>/landing/<pipeline>/      producers land newline-delimited JSON files here
    <root>/tables/<pipeline>/       the output table (Parquet, with Spark's _spark_metadata log)
    <root>/checkpoints/<pipeline>/  Spark's checkpoint, plus _pipeline/: the pipeline's ledger
    <root>/quarantine/<pipeline>/   records that could not be used, with file, line and reason
    <root>/runs/<pipeline>/         one run report per run, and its validation results
    <root>/quality/                 the Great Expectations project (suites, results) of all pipelines
    <root>/reports/                 the data quality report: index.html and the Data Docs site
    <root>/dimensions/              dimension tables that pipelines enrich events from (e.g. users.csv)
    <root>/archive/<pipeline>/      landed files a `retention: {landed: archive}` moved out of the landing
    <root>/builds/<pipeline>/       rebuilds (jobs/change/rebuild.py): each <id>/ a root of its own for the
                                    build's checkpoint, table, quarantine and runs; _CURRENT.json, once a
                                    rebuild switched, names the build runs use (jobs/lake/builds.py)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import unquote, urlparse

DEFAULT_ROOT = "./data"
S3_SCHEMES = ("s3a", "s3")


class StorageError(RuntimeError):
    """A location cannot be used as asked; the message says why and never carries a secret."""


class StorageUnavailable(StorageError):
    """The store did not serve a call, after every retry, for a reason that passes: it was
    throttled, answered a server error, stalled or could not be reached. Running again can
    succeed: a run ends `failed` (retried), never `refused`."""


def is_s3(uri: str) -> bool:
    return uri.startswith("s3a://")


def split_bucket(uri: str) -> tuple[str, str]:
    """s3a://bucket/a/b -> ("bucket", "a/b")."""
    parsed = urlparse(uri)
    return parsed.netloc, parsed.path.lstrip("/")


def normalize(uri: str) -> str:
    """Local paths become absolute paths; s3:// and s3a:// become s3a://bucket/prefix."""
    if "://" in uri:
        scheme, rest = uri.split("://", 1)
        if "@" in rest.split("/", 1)[0]:  # credentials written into the location: never echoed
            raise StorageError(
                f"{scheme}://…@{rest.split('/', 1)[0].rsplit('@', 1)[1]}: a location never holds credentials; "
                "give them in the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY: docs/s3.md)"
            )
        if scheme in S3_SCHEMES:
            if not rest.split("/", 1)[0]:
                raise StorageError(f"{uri}: no bucket; use s3a://bucket/prefix")
            # A key is a name, not a path: 'a/../b' is a third place, which every check of
            # where a location lies (inside a root, clear of production) would misjudge.
            if any(segment in ("", ".", "..") for segment in rest.rstrip("/").split("/")[1:]):
                raise StorageError(f"{uri}: a location has no empty, '.' or '..' parts; name the prefix as it is")
            return f"s3a://{rest.rstrip('/')}"
        if scheme != "file":
            raise StorageError(f"{uri}: use a local path or s3a://bucket/prefix (got a {scheme}:// location)")
        return str(Path(unquote(urlparse(uri).path)).resolve())
    return str(Path(uri).expanduser().resolve())


# What Hadoop reads as a pattern in any path it lists (a comma: inside braces); after a '\\'
# a character is itself.
_PATTERN = re.compile(r"([\\*?\[\]{},])")


def literal(location: str) -> str:
    """`location` as the pattern that matches it alone. Every location handed to Spark's
    file sources (and readers) goes through this: Hadoop globs whatever it lists, so a
    root named 'lake [prod]' would be a character class and read nothing, and a producer's
    folder 'dt=2023-07-30,*' inside braces would match every folder."""
    return _PATTERN.sub(r"\\\1", location)


def folder_pattern(folder: str) -> str:
    """A folder as a pattern that matches it alone (its last name in braces, '/x/{landing}').
    What a streaming file source is given to list: given the folder itself, Spark takes it for
    a sink's output as soon as a `_spark_metadata` folder is in it, and reads the files that
    folder's log names, wherever they are, in place of the folder's own; a producer could
    land one. A pattern is never a sink's output; Spark lists the folder it matches."""
    parent, _, name = literal(folder).rstrip("/").rpartition("/")
    return f"{parent}/{{{name}}}"


def join(base: str, *parts: str) -> str:
    return "/".join([base.rstrip("/"), *(p.strip("/") for p in parts)])


def from_spark(uri: str) -> str:
    """A location as Spark writes it in its logs and `_metadata`, a %-encoded URI
    ('file:///x/a%20b.json', 'file:/x/a%20b.json', 's3a://b/a%20b.json'), as the product
    writes locations ('/x/a b.json', 's3a://b/a b.json')."""
    local = uri.startswith("file:")  # 'file:/x' or 'file:///x': a local path
    path = uri.removeprefix("file:") if local else uri
    if "%" in path:  # only then: logs name 100,000s of files
        path = unquote(path)
    return "/" + path.lstrip("/") if local else path


def local_path(uri: str) -> Path:
    if is_s3(uri):
        raise StorageError(f"{uri}: this needs a local folder, not a bucket")
    if uri.startswith("file:"):
        return Path(unquote(urlparse(uri).path))
    return Path(uri)


def is_inside(uri: str, folder: str) -> bool:
    return uri == folder or uri.startswith(folder.rstrip("/") + "/")


OWN_ROOTS = ("backfills", "builds")  # what has a root of its own under <root>/<kind>/<pipeline>/<id>
# Each location's folder under a root (Locations.resolve): with OWN_ROOTS, the production's
# areas, where a backfill never publishes (jobs/backfill/request.py).
FOLDERS = {
    "landing": "landing",
    "output": "tables",
    "checkpoint": "checkpoints",
    "quarantine": "quarantine",
    "runs": "runs",
    "quality": "quality",
    "reports": "reports",
    "dimensions": "dimensions",
    "archive": "archive",
    "readers": "readers",
}


def own_root(root: str, kind: str, pipeline_name: str, build_id: str) -> str:
    """The root of a backfill's or a rebuild's build: its own checkpoint, table, quarantine
    and run reports (`Locations.with_own_root`), beside the pipeline's."""
    if kind not in OWN_ROOTS:
        raise ValueError(f"{kind!r} has no root of its own: one of {OWN_ROOTS}")
    return join(normalize(root), kind, pipeline_name, build_id)


@dataclass(frozen=True)
class Locations:
    landing: str
    output: str
    checkpoint: str
    quarantine: str
    runs: str
    quality: str
    reports: str
    dimensions: str = ""
    archive: str = ""  # where retention archives landed files (jobs/run/retention.py)
    readers: str = ""  # where each pipeline under the root says which landing it reads (jobs/run/readers.py)

    @classmethod
    def resolve(
        cls,
        pipeline_name: str,
        root: str = DEFAULT_ROOT,
        landing: str | None = None,
        output: str | None = None,
        checkpoint: str | None = None,
        quarantine: str | None = None,
        runs: str | None = None,
        reports: str | None = None,
    ) -> Locations:
        """Each location defaults from the root, following the documented layout."""
        from jobs.settings import settings  # here: Spark's Python workers import this module, without pydantic

        base = normalize(root)

        def under(name: str, given: str | None, *pipeline: str) -> str:
            return normalize(given) if given else join(base, FOLDERS[name], *pipeline)

        return cls(
            landing=under("landing", landing, pipeline_name),
            output=under("output", output, pipeline_name),
            checkpoint=under("checkpoint", checkpoint, pipeline_name),
            quarantine=under("quarantine", quarantine, pipeline_name),
            runs=under("runs", runs, pipeline_name),
            # Great Expectations keeps its project in a local folder, also when the root is a bucket.
            quality=under("quality", None)
            if not is_s3(base)
            else join(normalize(str(settings().quality_dir)), *split_bucket(base)),
            reports=under("reports", reports),
            dimensions=under("dimensions", None),
            archive=under("archive", None, pipeline_name),
            readers=under("readers", None),
        )

    def with_own_root(self, pipeline_name: str, root: str) -> Locations:
        # `root`: a backfill's or a build's (own_root).
        """A checkpoint, table, quarantine and runs of their own under `root` (a backfill's, a
        build's), reading this landing and these dimensions, named as here (normalizing them
        again would follow a symlink, and two file ledgers would name one file two ways)."""
        own = Locations.resolve(pipeline_name, root=root)
        return replace(own, landing=self.landing, dimensions=self.dimensions, readers=self.readers)

    def landed_name(self, path: str) -> str:
        """Where a file landed: `path`, or for one in retention's archive, its place in the landing."""
        if self.archive and is_inside(path, self.archive) and path != self.archive:
            return join(self.landing, path.removeprefix(self.archive.rstrip("/")))
        return path

    def archived_name(self, path: str) -> str:
        """Where retention archives a landed file (jobs/run/retention.py)."""
        return join(self.archive, path.removeprefix(self.landing.rstrip("/")))

    @property
    def uses_s3(self) -> bool:
        return any(is_s3(uri) for uri in (self.landing, self.output, self.checkpoint, self.quarantine, self.runs))

    @property
    def ledger(self) -> str:
        """The pipeline's own files beside Spark's, in the checkpoint (jobs/accounting/ledger.py)."""
        return join(self.checkpoint, "_pipeline")
