"""The bare floor of a small run: start a session, read one small JSON file, write one
Parquet file, stop. What any Spark job pays before it does anything of its own.

    python benchmarks/floor.py SOURCE.json TARGET_FOLDER
"""

import sys

from pyspark.sql import SparkSession

source, target = sys.argv[1], sys.argv[2]
spark = SparkSession.builder.master("local[*]").appName("floor").config("spark.ui.enabled", "false").getOrCreate()
spark.read.json(source).coalesce(1).write.mode("overwrite").parquet(target)
spark.stop()
