"""Memory tools: what a model can call to read and write its memory, and their executor.

Three tools, as OpenAI function-tool definitions (:meth:`MemoryTools.definitions`):

- ``update_working_memory`` ``{memory, mode}``: merge into the working memory (``mode="append"``,
  the default) or replace it (described to the model as dangerous: it erases what it omits).
- ``get_working_memory`` ``{}``: the working memory's current content.
- ``search_memory`` ``{query, top_k?}``: recall across all of the resource's threads (by words,
  and by meaning when the memory has an embedder); each hit with its thread and date.

:meth:`MemoryTools.execute` runs a model's tool call against the memory and returns a
:class:`~memvault.model.ToolResultPart` to feed back. It never raises for the model's mistakes
(unknown tool, bad arguments, a working-memory update that fails validation): those come back
as results with ``is_error=True`` and a message the model can act on. Store errors do raise.

Example::

    tools = MemoryTools(memory, resource_id="ada", thread_id="t1")
    response = await model.complete(messages, tools=tools.definitions())
    for call in response.tool_calls:
        if tools.handles(call.name):
            result = await tools.execute(call)
"""

from __future__ import annotations

import dataclasses
from typing import Any

from memvault.errors import ValidationError
from memvault.llm.base import Tool, ToolCall
from memvault.memory import Memory
from memvault.model import ToolResultPart
from memvault.recall import RecallOptions
from memvault.rules import working_memory as wm

GET_TOOL = "get_working_memory"
SEARCH_TOOL = "search_memory"
UPDATE_TOOL = wm.TOOL_NAME
MAX_SEARCH_RESULTS = 20


class MemoryTools:
    """The memory tools of one resource (and its current thread, for a thread-scoped working
    memory). ``search_options`` are the recall options of ``search_memory`` (default: the
    whole resource, no recent window, one neighbour each side of a hit)."""

    def __init__(
        self,
        memory: Memory,
        *,
        resource_id: str,
        thread_id: str | None = None,
        search_options: RecallOptions | None = None,
    ) -> None:
        self.memory = memory
        self.resource_id = resource_id
        self.thread_id = thread_id
        self.search_options = search_options or RecallOptions(
            scope="resource", last_n=0, working_memory=False)

    @property
    def notes(self) -> bool:
        """Whether the working-memory tools are offered (``WorkingMemoryOptions.enabled``)."""
        return self.memory.options.working_memory.enabled

    def definitions(self) -> list[Tool]:
        """The three tools, OpenAI function format (only ``search_memory`` when the memory's
        working memory is disabled)."""
        search: Tool = {"type": "function", "function": {
            "name": SEARCH_TOOL,
            "description": "Search everything said in earlier conversations with this user, by "
            "words and meaning. Returns the matching messages with their date.",
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "What to look for."},
                    "top_k": {"type": "integer", "minimum": 1, "maximum": MAX_SEARCH_RESULTS,
                              "default": 5, "description": "How many matches."},
                },
                "required": ["query"],
            },
        }}
        if not self.notes:
            return [search]
        read: Tool = {"type": "function", "function": {
            "name": GET_TOOL,
            "description": "Read the working memory: the note kept about the user and the task.",
            "parameters": {"type": "object", "properties": {}},
        }}
        return [self.memory.working_memory_tool(), read, search]

    def handles(self, name: str) -> bool:
        """Whether ``name`` is one of the memory tools offered."""
        return name == SEARCH_TOOL or (self.notes and name in (UPDATE_TOOL, GET_TOOL))

    async def execute(self, call: ToolCall) -> ToolResultPart:
        """Run the call; the model's mistakes come back as ``is_error`` results (see the module)."""
        try:
            output = await self._run(call.name, call.args)
        except (ValidationError, _BadArguments) as error:
            return ToolResultPart(tool_call_id=call.id, name=call.name, output=str(error), is_error=True)
        return ToolResultPart(tool_call_id=call.id, name=call.name, output=output)

    async def _run(self, name: str, args: dict[str, Any]) -> Any:
        if name == UPDATE_TOOL:
            if "memory" not in args:
                raise _BadArguments("update_working_memory needs `memory`")
            mode = args.get("mode", "append")
            if mode not in ("append", "replace"):
                raise _BadArguments(f"mode must be 'append' or 'replace', got {mode!r}")
            content = await self.memory.update_working_memory(
                args["memory"], resource_id=self.resource_id, thread_id=self.thread_id, mode=mode)
            return {"ok": True, "characters": len(content or "")}
        if name == GET_TOOL:
            note = await self.memory.get_working_memory(resource_id=self.resource_id,
                                                        thread_id=self.thread_id)
            return note if note is not None else "(the working memory is empty)"
        if name == SEARCH_TOOL:
            return await self._search(args)
        raise _BadArguments(f"unknown tool {name!r}; the memory tools are {UPDATE_TOOL}, {GET_TOOL}, "
                            f"{SEARCH_TOOL}")

    async def _search(self, args: dict[str, Any]) -> list[dict[str, Any]]:
        query, top_k = args.get("query"), args.get("top_k", 5)
        if not isinstance(query, str) or not query.strip():
            raise _BadArguments("search_memory needs a non-empty `query` string")
        if not isinstance(top_k, int) or isinstance(top_k, bool) or not 1 <= top_k <= MAX_SEARCH_RESULTS:
            raise _BadArguments(f"top_k must be an integer from 1 to {MAX_SEARCH_RESULTS}, got {top_k!r}")
        options = dataclasses.replace(self.search_options, top_k=top_k)
        result = await self.memory.recall(resource_id=self.resource_id, query=query,
                                          thread_id=self.thread_id, options=options)
        return [
            {"thread_id": hit.thread_id, "date": hit.created_at.isoformat(timespec="minutes"),
             "other_conversation": hit.other_thread,
             "messages": [{"role": m.role, "text": m.text} for m in hit.context or (hit.message,)]}
            for hit in result.hits
        ]


class _BadArguments(ValueError):
    """The model's call cannot run as given (returned to it as an error result)."""

