"""``python -m memvault`` is the ``memvault`` command."""

from memvault.cli.app import main

main()
