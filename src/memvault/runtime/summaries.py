"""Incremental summaries: what no longer fits the window, kept as a running summary.

When a thread's unsummarised part (the messages after the current summary, plus the summary
itself) exceeds ``trigger_tokens``, the model summarises everything but the last
``keep_messages`` messages. Incremental: the call gets the previous summary and only the
messages since, never the whole thread again. The summary is stored in its own table
(:meth:`memvault.Memory.save_summary`, compare-and-set, so two processes summarising at once
never overwrite each other) and survives restarts.

The boundary never separates a tool call from its result: it moves earlier until no call in the
summarised part has its result in the kept part (and the other way round).

Example::

    summary = await summarize_if_needed(memory, model, thread_id="t1", resource_id="ada",
                                        options=SummaryOptions(trigger_tokens=8_000))
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from memvault.errors import NotFoundError, ValidationError
from memvault.llm.base import ChatMessage, Model
from memvault.memory import Memory
from memvault.model import Message, Summary, TextPart, ToolCallPart, ToolResultPart
from memvault.rules.history import safe_starts
from memvault.rules.tokens import TokenCounter, message_tokens
from memvault.telemetry import traced

DEFAULT_INSTRUCTIONS = (
    "You keep the running summary of a conversation between a user and an assistant. Write a "
    "concise summary that preserves facts about the user, decisions, open tasks, names, dates "
    "and numbers; drop small talk. If a previous summary is given, merge the new messages into "
    "it and return one updated summary. Answer with the summary only."
)


@dataclass(frozen=True)
class SummaryOptions:
    """When and how a thread is summarised.

    - ``trigger_tokens`` (default 170,000): summarise when the summary plus the messages after
      it exceed this many tokens (counted with the memory's token counter).
    - ``keep_messages`` (default 6): the newest messages that always stay verbatim.
    - ``max_tokens`` (default 2,000): the cap on the summary's length, passed to the model.
    - ``instructions``: the system prompt of the summary call.
    """

    trigger_tokens: int = 170_000
    keep_messages: int = 6
    max_tokens: int = 2_000
    instructions: str = DEFAULT_INSTRUCTIONS

    def __post_init__(self) -> None:
        if self.trigger_tokens < 1 or self.keep_messages < 0 or self.max_tokens < 1:
            raise ValidationError("trigger_tokens and max_tokens must be >= 1, keep_messages >= 0")


def boundary(messages: Sequence[Message], keep: int) -> int:
    """How many of ``messages`` (oldest first) to summarise: all but the last ``keep``, moved
    earlier until no tool call and its result fall on different sides."""
    safe = safe_starts(messages)
    cut = max(0, len(messages) - keep)
    while cut > 0 and (cut < len(messages) and not safe[cut]):
        cut -= 1
    return cut


def transcript(messages: Sequence[Message]) -> str:
    """A plain-text rendering of messages for the summary call: one block per message,
    ``role (name): text``, tool calls as ``→ name(args)`` and results as ``← output``."""
    blocks = []
    for message in messages:
        name = message.metadata.get("name")
        head = f"{message.role} ({name})" if isinstance(name, str) and name else message.role
        lines = []
        for part in message.parts:
            if isinstance(part, TextPart):
                lines.append(part.text)
            elif isinstance(part, ToolCallPart):
                lines.append(f"→ {part.name}({json.dumps(part.args, ensure_ascii=False)})")
            elif isinstance(part, ToolResultPart):
                output = part.output if isinstance(part.output, str) else json.dumps(part.output)
                lines.append(f"← {output}")
        if lines:
            blocks.append(f"{head}: " + "\n".join(lines))
    return "\n\n".join(blocks)


def summary_prompt(
    previous: Summary | None, messages: Sequence[Message], instructions: str
) -> list[ChatMessage]:
    """The summary call's messages: the instructions, then the previous summary (if any) and
    the new messages."""
    body = f"Previous summary:\n{previous.text}\n\n" if previous is not None else ""
    body += f"New messages:\n{transcript(messages)}"
    return [{"role": "system", "content": instructions}, {"role": "user", "content": body}]


async def unsummarised(
    memory: Memory, *, thread_id: str, resource_id: str
) -> tuple[Summary | None, list[Message]]:
    """The thread's summary and the messages after it (the whole thread when there is none)."""
    for attempt in range(3):
        summary = await memory.get_summary(thread_id=thread_id, resource_id=resource_id)
        after = summary.through_message_id if summary is not None else None
        try:
            return summary, await memory.get_messages(thread_id=thread_id, resource_id=resource_id,
                                                      after=after)
        except NotFoundError:  # the summarised message was deleted since: so was the summary
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


@traced("summarize")
async def summarize_if_needed(
    memory: Memory,
    model: Model,
    *,
    thread_id: str,
    resource_id: str,
    options: SummaryOptions | None = None,
    count: TokenCounter | None = None,
) -> Summary | None:
    """Summarise the thread's older part when it is over ``options.trigger_tokens``; returns
    the new summary, or ``None`` when none was needed or another summariser won the race.
    A failing model raises (the caller, e.g. the turn helper, logs it: the turn goes on)."""
    options = options or SummaryOptions()
    count = count or memory.options.token_counter
    summary, messages = await unsummarised(memory, thread_id=thread_id, resource_id=resource_id)
    total = (count(summary.text) if summary else 0) + sum(message_tokens(m, count) for m in messages)
    if total <= options.trigger_tokens:
        return None
    cut = boundary(messages, options.keep_messages)
    if cut == 0:
        return None
    response = await model.complete(summary_prompt(summary, messages[:cut], options.instructions),
                                    max_tokens=options.max_tokens)
    text = response.text.strip()
    if not text:
        return None
    return await memory.save_summary(
        text, thread_id=thread_id, resource_id=resource_id, through_message_id=messages[cut - 1].id,
        expected_version=summary.version if summary else None,
    )
