"""Benchmarks: memvault measured against its peers and against floors (raw SQLite).

Each benchmark has a function returning its result as a JSON-ready dict (tests call it with
small sizes) and a ``memvault bench ...`` command that prints it (``--json``) or a table.
"""
