"""memvault's context for a Pydantic AI agent: the working memory and recalled older messages
as dynamic instructions (:func:`memory_instructions`), or as tools the model calls
(:func:`memory_toolset`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from memvault.integrations.pydantic_ai.messages import pydantic_ai_messages
from memvault.model import valid_id
from memvault.recall import RecallHit, RecallOptions
from memvault.runtime.summaries import transcript

if TYPE_CHECKING:
    from pydantic_ai import RunContext
    from pydantic_ai.toolsets import FunctionToolset

    from memvault.memory import Memory

__all__ = ["memory_instructions", "memory_toolset", "recalled_text"]

RECALL_HEADING = "Older messages that may be relevant (from memory):"


def recalled_text(hits: Sequence[RecallHit]) -> str:
    """The recalled hits as text for a prompt, each marked with where and when it was said;
    ``""`` when there are none."""
    blocks = []
    for hit in hits:
        where = "earlier conversation" if hit.other_thread else "earlier in this conversation"
        blocks.append(
            f"({where}, {hit.created_at.date().isoformat()})\n{transcript(hit.context or [hit.message])}"
        )
    return f"{RECALL_HEADING}\n" + "\n\n".join(blocks) if blocks else ""


def _query(prompt: Any) -> str:
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, Sequence):
        return " ".join(item for item in prompt if isinstance(item, str))
    return ""


def memory_instructions(
    memory: Memory,
    *,
    resource_id: str,
    thread_id: str | None = None,
    recall: RecallOptions | bool = True,
    working_memory: bool = True,
) -> Callable[[RunContext[Any]], Awaitable[str]]:
    """Dynamic instructions for ``Agent(instructions=...)`` (or ``@agent.instructions``):
    each run, the resource's working memory with how to keep it (``working_memory``; pair it
    with :func:`memory_toolset` so the model can update it), then the older messages that
    :meth:`Memory.recall <memvault.Memory.recall>` finds for the run's prompt, outside the
    recent window of ``thread_id`` (``recall``: ``True`` for the memory's options, a
    :class:`~memvault.recall.RecallOptions`, or ``False``). Reads only ``resource_id``."""
    resource_id = valid_id(resource_id, "resource_id")
    thread_id = None if thread_id is None else valid_id(thread_id, "thread_id")
    options = recall if isinstance(recall, RecallOptions) else None

    async def instructions(ctx: RunContext[Any]) -> str:
        sections = []
        if working_memory:
            sections.append(
                await memory.working_memory_instructions(resource_id=resource_id, thread_id=thread_id)
            )
        query = _query(ctx.prompt)
        if recall is not False and query.strip():
            found = await memory.recall(
                resource_id=resource_id, query=query, thread_id=thread_id, options=options
            )
            # a hit without context lies in the thread's recent window, which the history has
            if text := recalled_text([hit for hit in found.hits if hit.context]):
                sections.append(text)
        return "\n\n".join(s for s in sections if s)

    return instructions


def memory_toolset(
    memory: Memory,
    *,
    resource_id: str,
    thread_id: str | None = None,
    recall: RecallOptions | None = None,
) -> FunctionToolset[Any]:
    """A Pydantic AI toolset (``Agent(toolsets=[...])``) with two tools over ``resource_id``'s
    memory: ``search_memory(query)`` (recall: the older messages that match, as text) and
    ``update_working_memory(memory, mode="append")`` (the working memory, merged or replaced).
    ``thread_id`` is the current thread (its recent window is left out of recall, and a
    thread-scoped working memory is that thread's)."""
    toolsets = _toolsets()
    notes = memory  # the tool's argument is named "memory", as memvault's own tool's
    resource_id = valid_id(resource_id, "resource_id")
    thread_id = None if thread_id is None else valid_id(thread_id, "thread_id")

    async def search_memory(query: str) -> str:
        """Search older conversations for messages relevant to ``query``; returns them as
        text with when they were said, or says that nothing was found."""
        found = await notes.recall(resource_id=resource_id, query=query, thread_id=thread_id, options=recall)
        return recalled_text(found.hits) or "Nothing relevant found in memory."

    async def update_working_memory(memory: str, mode: str = "append") -> str:
        """Save what is worth remembering about the user or task in the working memory.
        ``mode`` "append" (default) merges it in; "replace" erases everything else."""
        if mode not in ("append", "replace"):
            return "mode must be 'append' or 'replace'"
        return await notes.update_working_memory(
            memory,
            resource_id=resource_id,
            thread_id=thread_id,
            mode="replace" if mode == "replace" else "append",
        )

    toolset: FunctionToolset[Any] = toolsets.FunctionToolset([search_memory, update_working_memory])
    return toolset


def _toolsets() -> Any:
    pydantic_ai_messages()  # MissingExtraError without the extra
    from pydantic_ai import toolsets

    return toolsets
