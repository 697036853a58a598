"""Write Great Expectations' expectations, as the product may name them in a suite, with their
arguments: jobs/validate/gx_expectations.json. A suite is checked against it when it loads,
without importing Great Expectations (DAG files load suites); tests/unit/test_suite.py keeps it
equal to what the locked Great Expectations says.

    .venv/bin/python -m infra.gx_registry      (after changing great-expectations in the lock)
"""

from __future__ import annotations

import json
import sys

from jobs.validate.suite import GX_EXPECTATIONS, gx_class_name

# What Great Expectations' models hold that a suite does not give: the product sets severity and
# meta itself, and the rest is Great Expectations' own.
NOT_GIVEN = {"id", "meta", "notes", "description", "result_format", "catch_exceptions", "rendered_content"}
NOT_GIVEN |= {"severity", "windows", "batch_id"}


def registry() -> dict[str, dict[str, list[str]]]:
    """expectation (without expect_) -> its required and optional arguments, for each one the
    product can build (`gx.expectations.<ExpectName>`)."""
    import great_expectations as gx
    from great_expectations.expectations import registry as gx_registry

    found = {}
    for full in sorted(gx_registry.list_registered_expectation_implementations()):
        name = full.removeprefix("expect_")
        cls = getattr(gx.expectations, gx_class_name(name), None)
        if cls is None:
            continue
        fields = {key: f for key, f in cls.__fields__.items() if key not in NOT_GIVEN}
        found[name] = {
            "required": sorted(key for key, f in fields.items() if f.required),
            "optional": sorted(key for key, f in fields.items() if not f.required),
        }
    return found


def main() -> int:
    GX_EXPECTATIONS.write_text(json.dumps(registry(), indent=1, sort_keys=True) + "\n")
    print(GX_EXPECTATIONS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
