"""``memvault demo``: the main job on the embedded default, offline."""

from __future__ import annotations


def demo() -> None:
    """Teach memvault some facts in one conversation, recall them in another (offline)."""
    raise NotImplementedError
