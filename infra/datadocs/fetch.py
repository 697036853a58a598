"""Fetch the Data Docs assets listed in assets.json into the cache's datadocs-assets (once).

Run by `make assets` (and so by `make demo` and `make test`): python -m infra.datadocs.fetch
Each package comes from the npm registry with `npm pack` (exact version, integrity checked
by npm); only the files assets.json names are kept, and assets.json goes with them as the
cache's manifest.json, which the report reads (jobs/quality_report/data_docs.py).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from jobs.settings import settings

HERE = Path(__file__).resolve().parent
CACHE = settings().datadocs_assets_dir


def package_dir(spec: str) -> Path:
    return CACHE / spec.replace("/", "__")


def fetch(spec: str, files: list[str]) -> None:
    target = package_dir(spec)
    if all((target / f).exists() for f in files):
        return
    if shutil.which("npm") is None:
        sys.exit(f"error: npm is needed once to fetch {spec} for an offline Data Docs site (apt-get install npm)")
    print(f"fetching {spec} from the npm registry...", file=sys.stderr)
    with tempfile.TemporaryDirectory() as scratch:
        subprocess.run(
            ["npm", "pack", "--silent", spec, "--pack-destination", scratch], check=True, stdout=subprocess.DEVNULL
        )
        (tarball,) = Path(scratch).glob("*.tgz")
        with tarfile.open(tarball) as archive:
            archive.extractall(scratch, filter="data")
        staged = target.with_name(target.name + ".partial")
        shutil.rmtree(staged, ignore_errors=True)
        for name in files:
            source = Path(scratch) / "package" / name
            if source.is_dir():
                shutil.copytree(source, staged / name)
            else:
                (staged / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, staged / name)
        shutil.rmtree(target, ignore_errors=True)
        staged.rename(target)


def main() -> int:
    manifest = json.loads((HERE / "assets.json").read_text())
    for spec, urls in manifest["packages"].items():
        fetch(spec, sorted(set(urls.values())))
    shutil.copy2(HERE / "assets.json", CACHE / "manifest.json")
    print(CACHE)
    return 0


if __name__ == "__main__":
    sys.exit(main())
