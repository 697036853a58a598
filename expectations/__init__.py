"""Expectation suites, one per output table (YAML data, shipped as package data).

Each `<table>.yaml` names Great Expectations expectations with a severity, and checks on
the run reports; jobs/validate/suite.py reads and checks them.
"""
