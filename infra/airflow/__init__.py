"""Part of infra/ (see infra/README.md)."""
