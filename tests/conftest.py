"""Shared by the whole suite. Being here puts ``tests/`` on ``sys.path``, so that test modules
anywhere import the shared helpers (``postgres_server``) by name."""
