"""The product's listing of a landing, over generated landings (tests/landings.py): the files a
run takes are exactly the regular files inside it, each once; links (in, out, loops), fifos,
names the JVM cannot open and S3 keys with odd segments are named, never listed as files, and
nothing outside the landing is ever listed. No Spark (tests/integration/test_landing_boundary.py
has Spark's listing agree). `JOBS_HYPOTHESIS_EXAMPLES` raises the number of examples."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings

from jobs.lake import listings
from jobs.lake.layout import join
from tests.landings import ENTRIES, KEYS, key_taken, make

EXAMPLES = int(os.environ.get("JOBS_HYPOTHESIS_EXAMPLES", "150"))


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ENTRIES)
def test_a_local_landing_lists_its_regular_files_each_once_and_names_the_rest(entries):
    with tempfile.TemporaryDirectory() as scratch:
        landing, expected = make(Path(scratch), entries)
        found = listings.listing(str(landing))

        assert set(found.files) == expected
        assert len(found.files) == len(set(found.files))
        inside = str(landing) + "/"
        assert all(location.startswith(inside) for location in [*found.files, *found.skipped])
        for location in found.skipped:  # named: what is there and is no file a run takes
            assert os.path.lexists(os.fsencode(location)) and location not in expected


@settings(max_examples=max(EXAMPLES // 5, 10), deadline=None)
@given(KEYS)
def test_an_s3_landing_lists_keys_without_odd_segments_and_names_the_odd_ones(s3_endpoint, keys):
    import secrets

    from jobs.lake import s3
    from tests.helpers import S3_BUCKET

    prefix = f"listing-{secrets.token_hex(4)}"
    landing = f"s3a://{S3_BUCKET}/{prefix}/landing"
    client = s3.client()
    for key in {*keys, "../outside.json", "x/../../outside2.json"}:
        client.put_object(Bucket=S3_BUCKET, Key=f"{prefix}/landing/{key}", Body=b'{"n": 1}\n')
    client.put_object(Bucket=S3_BUCKET, Key=f"{prefix}/outside.json", Body=b'{"n": 2}\n')

    found = listings.listing(landing)

    assert set(found.files) == {join(landing, key) for key in keys if key_taken(key)}
    odd = {key for key in {*keys, "../outside.json", "x/../../outside2.json"} if not key_taken(key)}
    named = {location.removeprefix(landing + "/") for location in found.skipped}
    assert named == {key for key in odd if not _hidden_or_marker(key)}


def _hidden_or_marker(key: str) -> bool:
    """What a listing leaves out without a word: a folder's marker, or under a hidden name."""
    segments = key.split("/")
    return key.endswith("/") or any(s.startswith((".", "_")) and s not in (".", "..") for s in segments)
