"""Scripts that print figures (never timed assertions): python -m benchmarks.<name>."""
