"""The offline demo: a scripted stand-in model teaches memvault some facts in one conversation,
and a later conversation in a new thread gets them back through working memory and search.

Everything goes through the public API, on the embedded default store (a SQLite file).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from memvault.formats import to_openai
from memvault.memory import Memory
from memvault.model import Message, SearchHit, TextPart, ToolCallPart, ToolResultPart
from memvault.working_memory import TOOL_NAME, WorkingMemoryOptions

RESOURCE = "ada"
PROFILE = WorkingMemoryOptions(template="# User profile\n- Name:\n- Preferences:\n- Plans:\n")

FIRST_CONVERSATION: list[tuple[str, list[dict[str, Any]]]] = [
    (
        "Hi! I'm Ada. I prefer green tea over coffee, and please keep answers short.",
        [
            {"tool": TOOL_NAME, "args": {"memory": "# User profile\n- Name: Ada\n"
                                         "- Preferences: green tea over coffee; short answers"}},
            {"text": "Nice to meet you, Ada. Green tea and short answers: noted."},
        ],
    ),
    (
        "I'm planning a trip to Kyoto in April to see the cherry blossoms.",
        [
            {"tool": TOOL_NAME, "args": {"memory": "- Plans: Kyoto trip in April (cherry blossoms)"}},
            {"text": "Kyoto in April is lovely. Go early to the Philosopher's Path."},
        ],
    ),
]
SECOND_QUESTION = "What should I drink on my trip?"
SECOND_ANSWER = "Ada, try a matcha at a tea house near the Philosopher's Path in Kyoto."


@dataclass
class Turn:
    """What one turn fed the model and what it answered."""

    thread_id: str
    model_input: list[dict[str, Any]]
    recalled: list[SearchHit] = field(default_factory=list)
    saved: list[Message] = field(default_factory=list)


async def context(
    memory: Memory, thread_id: str, user: Message
) -> tuple[list[dict[str, Any]], list[SearchHit]]:
    """The model input for a turn: instructions with working memory, older messages from other
    threads found by search (with their date), the history window and the new user message."""
    system = await memory.working_memory_instructions(resource_id=RESOURCE)
    hits = [
        h for h in await memory.search_messages(resource_id=RESOURCE, query=user.text, limit=5)
        if h.message.thread_id != thread_id
    ]
    if hits:
        lines = [
            f"- [{h.message.created_at:%Y-%m-%d}, conversation {h.message.thread_id}] "
            f"{h.message.role}: {h.message.text}"
            for h in hits
        ]
        system += "\n\nFrom earlier conversations:\n" + "\n".join(lines)
    history = await memory.get_history(thread_id=thread_id, resource_id=RESOURCE)
    return [{"role": "system", "content": system}, *to_openai([*history, user])], hits


async def run_turn(
    memory: Memory, thread_id: str, user_text: str, steps: list[dict[str, Any]]
) -> Turn:
    """One turn with the scripted model: each step is a tool call (run against the memory and
    answered with its result) or a final text."""
    user = Message.user(user_text)
    model_input, hits = await context(memory, thread_id, user)
    produced = [user]
    for number, step in enumerate(steps):
        if "tool" in step:
            call = ToolCallPart(tool_call_id=f"call_{user.id[:8]}_{number}", name=step["tool"],
                                args=step["args"])
            output = await execute_tool(memory, call)
            produced.append(Message(role="assistant", parts=[call]))
            produced.append(Message(role="tool", parts=[
                ToolResultPart(tool_call_id=call.tool_call_id, name=call.name, output=output)
            ]))
        else:
            produced.append(Message(role="assistant", parts=[TextPart(text=step["text"])]))
    saved = await memory.save_messages(produced, thread_id=thread_id, resource_id=RESOURCE)
    return Turn(thread_id, model_input, hits, saved)


async def execute_tool(memory: Memory, call: ToolCallPart) -> str:
    tools: dict[str, Callable[..., Any]] = {TOOL_NAME: memory.update_working_memory}
    args = dict(call.args) if isinstance(call.args, dict) else {}
    await tools[call.name](args.pop("memory"), resource_id=RESOURCE, **args)
    return json.dumps({"ok": True})


async def run(memory: Memory) -> list[Turn]:
    """The whole demo: two turns in a first thread, then one in a new thread."""
    await memory.delete_resource(resource_id=RESOURCE)
    turns = [await run_turn(memory, "first-visit", text, steps) for text, steps in FIRST_CONVERSATION]
    turns.append(await run_turn(memory, "weeks-later", SECOND_QUESTION, [{"text": SECOND_ANSWER}]))
    return turns
