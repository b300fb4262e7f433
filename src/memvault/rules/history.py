"""The history window: the recent messages of a thread fed to the model each turn.

The window is the newest ``last_n`` messages, trimmed from the oldest end to fit ``max_tokens``,
and it never separates a tool call from its result:

- a tool call whose result is not in the window, or a result whose call is not, is left out of
  the returned copy of its message (a message left with no parts is dropped);
- the token cut falls only between complete tool exchanges.
"""

from __future__ import annotations

from collections.abc import Sequence

from memvault.model import Message, ToolCallPart, ToolResultPart
from memvault.rules.tokens import TokenCounter, estimate_tokens, message_tokens


def pair_tool_parts(messages: Sequence[Message]) -> list[Message]:
    """Copies of ``messages`` without unpaired tool calls and results; emptied messages dropped."""
    calls = {p.tool_call_id for m in messages for p in m.parts if isinstance(p, ToolCallPart)}
    results = {p.tool_call_id for m in messages for p in m.parts if isinstance(p, ToolResultPart)}
    paired = calls & results
    out = []
    for message in messages:
        parts = [
            p for p in message.parts
            if not isinstance(p, ToolCallPart | ToolResultPart) or p.tool_call_id in paired
        ]
        if len(parts) == len(message.parts):
            out.append(message)
        elif parts:
            out.append(message.model_copy(update={"parts": parts}))
    return out


def safe_starts(messages: Sequence[Message]) -> list[bool]:
    """``safe[i]`` is true when cutting before ``messages[i]`` splits no tool exchange."""
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for i, message in enumerate(messages):
        for part in message.parts:
            if isinstance(part, ToolCallPart | ToolResultPart):
                first.setdefault(part.tool_call_id, i)
                last[part.tool_call_id] = i
    open_spans = [0] * (len(messages) + 1)
    for call_id, start in first.items():
        open_spans[start + 1] += 1
        open_spans[last[call_id] + 1] -= 1
    safe, depth = [], 0
    for i in range(len(messages)):
        depth += open_spans[i]
        safe.append(depth == 0)
    return safe


def window(
    messages: Sequence[Message],
    *,
    last_n: int | None = 10,
    max_tokens: int | None = None,
    count: TokenCounter = estimate_tokens,
) -> list[Message]:
    """The history window over ``messages`` (a thread's tail, in order); see the module doc."""
    tail = list(messages)[-last_n:] if last_n else ([] if last_n == 0 else list(messages))
    tail = pair_tool_parts(tail)
    if max_tokens is None:
        return tail
    safe = safe_starts(tail)
    used, start = 0, len(tail)
    for i in range(len(tail) - 1, -1, -1):
        used += message_tokens(tail[i], count)
        if used > max_tokens:
            break
        if safe[i]:
            start = i
    return tail[start:]
