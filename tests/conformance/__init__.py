"""The storage conformance suite: one behaviour suite run over every store (see conftest.py)."""
