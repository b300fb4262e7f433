"""Context assembly: what the model sees this turn, within a token budget.

In order, as OpenAI chat messages (:func:`assemble`):

1. **system**: the agent's instructions, then the working memory with how to keep it;
2. **summary** (when the thread has one), once, as a system message under a marker: the
   summary of everything up to a message, which the history window then starts after;
3. **recalled** messages (when ``recall`` is on): older messages relevant to the query, from this
   thread or the user's other conversations, in one system message, each marked with where and
   when it was said ("earlier conversation, 2023-05-08");
4. **history**: the newest messages of the thread after the summary, verbatim (tool calls with
   their results, never one without the other).

Budget (``max_tokens``, counted with the memory's token counter): the system text and the
summary always go in; the history gets what is left, newest first (``history_share`` of it at
least, when recalled messages compete for it); recalled hits fill the rest, best first, a
whole hit (with its neighbours) or nothing. What did not fit is counted in
:attr:`Context.dropped`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from memvault.errors import ValidationError
from memvault.formats.openai_chat import to_openai
from memvault.llm.base import ChatMessage
from memvault.memory import Memory
from memvault.model import Message, Summary
from memvault.recall import RecallHit, RecallOptions, RecallReader
from memvault.rules import working_memory as wm
from memvault.rules.history import window
from memvault.rules.tokens import MESSAGE_OVERHEAD, TokenCounter, message_tokens
from memvault.runtime.summaries import transcript
from memvault.stores.base import UNSET, _Unset

SUMMARY_MARKER = "Summary of the earlier part of this conversation"
RECALL_MARKER = (
    "Messages recalled from earlier conversations (for reference; not part of the current exchange)"
)


@dataclass(frozen=True)
class ContextOptions:
    """How the context is assembled (see the module docstring).

    - ``instructions`` (default ``"You are a helpful assistant."``): the agent's system prompt.
    - ``max_tokens`` (default 16,000): the budget for everything assembled.
    - ``recall`` (default ``True``): recall older messages by the query (the user's message).
    - ``recall_options``: for that recall (default: :class:`RecallOptions` defaults, or the
      memory's ``MemoryOptions.recall``).
    - ``history_share`` (default 0.6): the part of the budget left after the system text and the
      summary that the history window may always use before recalled messages get any.
    - ``working_memory`` (default ``True``): include the working memory and its instructions
      (never when the memory's ``WorkingMemoryOptions.enabled`` is ``False``).
    """

    instructions: str = "You are a helpful assistant."
    max_tokens: int = 16_000
    recall: bool = True
    recall_options: RecallOptions | None = None
    history_share: float = 0.6
    working_memory: bool = True

    def __post_init__(self) -> None:
        if self.max_tokens < 1 or not 0.0 <= self.history_share <= 1.0:
            raise ValidationError("max_tokens must be >= 1 and history_share from 0 to 1")


@dataclass
class Context:
    """One turn's assembled input: ``messages`` is what to send to the model."""

    messages: list[ChatMessage]
    system: str
    history: list[Message]
    recalled: list[RecallHit]
    summary: Summary | None
    working_memory: str | None
    tokens: int
    dropped: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


async def assemble(
    memory: Memory,
    *,
    thread_id: str,
    resource_id: str,
    query: str,
    options: ContextOptions | None = None,
    reader: RecallReader | None = None,
    summary: Summary | _Unset | None = UNSET,
) -> Context:
    """The context for a turn of ``thread_id`` whose user message is ``query`` (already saved,
    so it is the last message of the history). ``reader`` (default
    :meth:`memvault.Memory.recall_reader`) reads the window, the note and what recall needs;
    the note is read once. ``summary``: the thread's summary when the caller already read it."""
    options = options or ContextOptions()
    reader = reader or memory.recall_reader(resource_id)
    count = functools.lru_cache(maxsize=None)(memory.options.token_counter)  # texts repeat below
    if isinstance(summary, _Unset):
        summary = await memory.get_summary(thread_id=thread_id, resource_id=resource_id)
    system = options.instructions
    note = None
    if options.working_memory and memory.options.working_memory.enabled:
        note = await reader.note(thread_id)
        system += "\n\n" + wm.instructions(memory.options.working_memory, note)
    head: list[ChatMessage] = [{"role": "system", "content": system}]
    if summary is not None:
        when = summary.updated_at.date().isoformat()
        head.append({"role": "system", "content": f"[{SUMMARY_MARKER}, as of {when}]\n{summary.text}"})
    used = sum(count(str(m["content"])) + MESSAGE_OVERHEAD for m in head)
    left = max(0, options.max_tokens - used)

    hits: list[RecallHit] = []
    warnings: list[str] = []
    if options.recall and query.strip():
        recall_options = options.recall_options or memory.options.recall
        result = await memory.recall(resource_id=resource_id, thread_id=thread_id, query=query,
                                     options=recall_options, reader=reader)
        hits, warnings, tail = result.hits, result.warnings, result.history
    else:
        tail = await reader.window(thread_id)
    through = summary.through_seq if summary is not None else 0
    tail = [m for m in tail if m.seq is None or m.seq > through]
    history_budget = left if not hits else max(int(left * options.history_share),
                                               left - _hits_tokens(hits, count))
    history = window(tail, last_n=None, max_tokens=history_budget, count=count)
    used += sum(message_tokens(m, count) for m in history)

    fed: list[RecallHit] = []
    blocks: list[str] = []
    shown = {(m.thread_id, m.id) for m in history}
    head_cost = MESSAGE_OVERHEAD + count(f"[{RECALL_MARKER}]")
    budget = options.max_tokens - used - head_cost
    for hit in hits:
        context = [m for m in hit.context or (hit.message,) if (m.thread_id, m.id) not in shown]
        block = _block(hit, context)
        cost = count(block)
        if not context or cost > budget:
            continue
        budget -= cost
        fed.append(hit)
        blocks.append(block)
        shown.update((m.thread_id, m.id) for m in context)
    recall_messages: list[ChatMessage] = []
    if blocks:
        text = f"[{RECALL_MARKER}]\n" + "\n\n".join(blocks)
        recall_messages.append({"role": "system", "content": text})
        used += head_cost + sum(count(block) for block in blocks)  # the blocks' counts, cached
    return Context(
        messages=[*head, *recall_messages, *to_openai(history)],
        system=system,
        history=history,
        recalled=fed,
        summary=summary,
        working_memory=note,
        tokens=used,
        dropped={"history": len(tail) - len(history), "recalled": len(hits) - len(fed)},
        warnings=warnings,
    )


def _block(hit: RecallHit, context: list[Message]) -> str:
    where = "earlier conversation" if hit.other_thread else "earlier in this conversation"
    return f"({where}, {hit.created_at.date().isoformat()})\n{transcript(context)}"


def _hits_tokens(hits: list[RecallHit], count: TokenCounter) -> int:
    return sum(count(_block(hit, list(hit.context or (hit.message,)))) for hit in hits)
