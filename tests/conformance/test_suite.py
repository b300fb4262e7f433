"""The packaged conformance suite, collected here over the stores of conftest.py."""

from memvault.testing.suite import *  # noqa: F403
