"""The JVM side's build: one Maven build (jvm/pom.xml) at the versions the locked pyspark
ships, a reproducible jar of the product's own that the package carries, and a jar lock
whose s3a is hadoop-aws of Spark's own Hadoop with the AWS SDK v2 (no 3.3.1, no SDK v1)."""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import tomllib
import xml.etree.ElementTree as ET
import zipfile
from datetime import datetime
from pathlib import Path

import pyspark
import pytest

from jobs.jvm import jars
from tests.helpers import REPO

POM = REPO / "jvm" / "pom.xml"
NS = {"m": "http://maven.apache.org/POM/4.0.0"}
SPARK_JARS = Path(pyspark.__file__).parent / "jars"


def pom_property(name: str) -> str:
    return ET.parse(POM).getroot().find(f"m:properties/m:{name}", NS).text


def shipped(prefix: str) -> str:
    """The version of a jar pyspark ships (e.g. hadoop-client-api-3.5.0.jar -> 3.5.0)."""
    (jar,) = SPARK_JARS.glob(f"{prefix}-[0-9]*.jar")
    return jar.name.removeprefix(f"{prefix}-").removesuffix(".jar")


def test_the_pom_builds_against_the_spark_the_lock_installs():
    locked = re.search(r"^pyspark==(\S+)", (REPO / "requirements.txt").read_text(), re.M).group(1)
    assert pom_property("spark.version") == pyspark.__version__ == locked
    assert shipped("scala-library").startswith(pom_property("scala.binary.version") + ".")
    assert pom_property("hadoop.version") == shipped("hadoop-client-api") == shipped("hadoop-client-runtime")
    assert pom_property("maven.compiler.release") == "17"
    version = ET.parse(POM).getroot().find("m:version", NS).text
    assert version == tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]


def test_the_lock_s_s3a_is_hadoop_aws_of_spark_s_hadoop_with_the_sdk_v2():
    locked = {jar.coordinates.rsplit(":", 1)[0]: jar for jar in jars.locked("s3a")}
    assert locked["org.apache.hadoop:hadoop-aws"].coordinates.endswith(":" + shipped("hadoop-client-api"))
    # The SDK modules s3a uses, not the 686 MB bundle hadoop-aws declares, which Spark's
    # resolution is told to leave out too.
    for module in ("s3", "s3-transfer-manager", "sts", "apache-client", "netty-nio-client"):
        assert locked[f"software.amazon.awssdk:{module}"].coordinates.endswith(":" + pom_property("aws.sdk.version"))
    assert "software.amazon.awssdk:bundle" not in locked and "software.amazon.awssdk:bundle" in jars.left_to_spark()
    every = " ".join(jar.coordinates for jar in jars.locked())
    assert "3.3.1" not in every and "com.amazonaws" not in every and "aws-java-sdk" not in every
    assert all(re.fullmatch(r"[0-9a-f]{64}", jar.sha256) and jar.size > 0 for jar in jars.locked())


def test_a_jar_that_is_not_the_locked_one_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("JOBS_JARS_DIR", str(tmp_path))
    jar = jars.locked("s3a")[0]
    (tmp_path / jar.file).write_bytes(b"x" * jar.size)  # the right size, not the right bytes
    assert jar in jars.missing("s3a")
    with pytest.raises(Exception, match="python -m jobs jars"):
        jars.paths("s3a")


def test_the_product_s_jar_is_built_reproducibly_and_carries_the_package_s_version(tmp_path):
    built = jars.product_jar()
    assert built is not None, "make jvm builds it"
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    with zipfile.ZipFile(built) as jar:
        assert f"version={version}" in jar.read("io/triggeronce/jobs/version.properties").decode()
        manifest = jar.read("META-INF/MANIFEST.MF").decode()
        assert f"Implementation-Version: {version}" in manifest and "Build-Jdk-Spec: 17" in manifest
    # The same sources, built again elsewhere (offline: Maven has what it needs), give the same bytes.
    copy = tmp_path / "jvm"
    shutil.copytree(REPO / "jvm", copy, ignore=shutil.ignore_patterns("target"))
    again = subprocess.run(
        ["mvn", "-B", "-q", "-o", "-f", str(copy / "pom.xml"), "package", "-DskipTests"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert again.returncode == 0, again.stdout + again.stderr
    rebuilt = copy / "target" / built.name
    assert hashlib.sha256(rebuilt.read_bytes()).digest() == hashlib.sha256(built.read_bytes()).digest()
    # Dated as its entries are: a clone of the same sources starts from the same class archive.
    stamp = re.search(r"<project.build.outputTimestamp>(.+?)<", (REPO / "jvm" / "pom.xml").read_text()).group(1)
    assert built.stat().st_mtime == datetime.fromisoformat(stamp).timestamp()
