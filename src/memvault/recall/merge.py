"""Placing recalled messages around the recent window, never repeating a message.

Messages are the same message when they have the same ``(thread_id, id)``.

- ``prepend``: recalled messages (oldest first), then the window.
- ``append``: the window, then the recalled messages.
- ``interleave``: both merged by ``created_at``; each list keeps its own order, and a recalled
  message with the same time as a window message comes first (it is older in its thread).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from memvault.model import Message
from memvault.recall.options import MergeStrategy


def key(message: Message) -> tuple[str | None, str]:
    return (message.thread_id, message.id)


def without(messages: Iterable[Message], exclude: Iterable[Message]) -> list[Message]:
    """``messages`` minus those in ``exclude`` and minus repeats, in order."""
    seen = {key(m) for m in exclude}
    out = []
    for message in messages:
        if key(message) not in seen:
            seen.add(key(message))
            out.append(message)
    return out


def chronological(messages: Iterable[Message]) -> list[Message]:
    """Oldest first: messages of one thread stay in ``seq`` order; threads are placed by their
    earliest message. Repeats are dropped."""
    by_thread: dict[str | None, list[Message]] = {}
    for message in without(messages, ()):
        by_thread.setdefault(message.thread_id, []).append(message)
    blocks = [sorted(group, key=lambda m: (m.seq is None, m.seq or 0)) for group in by_thread.values()]
    blocks.sort(key=lambda block: min(m.created_at for m in block))
    return [m for block in blocks for m in block]


def merge(recalled: Sequence[Message], window: Sequence[Message], strategy: MergeStrategy) -> list[Message]:
    """The messages to feed: the window and the recalled messages that are not in it."""
    extra = without(recalled, window)
    if strategy == "prepend":
        return [*extra, *window]
    if strategy == "append":
        return [*window, *extra]
    out: list[Message] = []
    i = j = 0
    while i < len(extra) and j < len(window):
        if extra[i].created_at <= window[j].created_at:
            out.append(extra[i])
            i += 1
        else:
            out.append(window[j])
            j += 1
    return [*out, *extra[i:], *window[j:]]
