"""The demo and its sample data: not part of the runtime package (see demo/__main__.py)."""
