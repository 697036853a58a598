"""The local Spark standalone cluster (make cluster)."""
