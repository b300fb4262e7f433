"""The offline demo: a scripted stand-in model teaches memvault some facts in one conversation,
and a later conversation in a new thread gets them back through working memory and recall.

Everything goes through the public API and the agent runtime (``Runtime.turn``), on the
embedded default store (a SQLite file). The "model" is :class:`memvault.llm.ScriptedModel`:
its answers are written below, but what it is *fed* is real: each turn's input is assembled by
memvault, and its tool calls run against the memory.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memvault.llm import ChatMessage, ModelResponse, ScriptedModel, Tool, ToolCall
from memvault.memory import Memory
from memvault.model import Message
from memvault.recall import RecallHit
from memvault.rules.working_memory import TOOL_NAME, WorkingMemoryOptions
from memvault.runtime import Runtime, TurnOptions
from memvault.runtime.titles import TITLE_INSTRUCTIONS

RESOURCE = "ada"
PROFILE = WorkingMemoryOptions(template="# User profile\n- Name:\n- Preferences:\n- Plans:\n")


def _remember(call_id: str, note: str) -> ModelResponse:
    call = ToolCall(call_id, TOOL_NAME, {"memory": note})
    return ModelResponse(tool_calls=(call,), finish_reason="tool_calls")


CONVERSATIONS: list[tuple[str, str, list[ModelResponse | str]]] = [
    ("first-visit", "Hi! I'm Ada. I prefer green tea over coffee, and please keep answers short.", [
        _remember("call_1", "# User profile\n- Name: Ada\n"
                            "- Preferences: green tea over coffee; short answers"),
        "Nice to meet you, Ada. Green tea and short answers: noted.",
    ]),
    ("first-visit", "I'm planning a trip to Kyoto in April to see the cherry blossoms.", [
        _remember("call_2", "- Plans: Kyoto trip in April (cherry blossoms)"),
        "Kyoto in April is lovely. Go early to the Philosopher's Path.",
    ]),
    ("weeks-later", "What should I drink on my trip?", [
        "Ada, try a matcha at a tea house near the Philosopher's Path in Kyoto.",
    ]),
]


@dataclass
class Turn:
    """What one turn fed the model and what it produced."""

    thread_id: str
    model_input: list[ChatMessage]
    recalled: list[RecallHit] = field(default_factory=list)
    saved: list[Message] = field(default_factory=list)


def _titles(messages: list[ChatMessage], tools: list[Tool] | None) -> str:
    """The stand-in for a small title model: the user's first words."""
    assert messages[0]["content"] == TITLE_INSTRUCTIONS
    return " ".join(str(messages[-1]["content"]).split()[:5])


async def run(memory: Memory) -> list[Turn]:
    """The whole demo: two turns in a first thread, then one in a new thread."""
    await memory.delete_resource(resource_id=RESOURCE)
    turns = []
    async with Runtime(memory, options=TurnOptions(summaries=None)) as runtime:
        for thread_id, text, replies in CONVERSATIONS:
            model, titles = ScriptedModel(list(replies)), ScriptedModel(_titles)
            async with runtime.turn(thread_id=thread_id, resource_id=RESOURCE, user_message=text,
                                    model=model, summary_model=titles) as turn:
                await turn.run()
                assert turn.context is not None
                turns.append(Turn(thread_id, turn.context.messages, turn.context.recalled,
                                  [turn.user_message, *turn.output]))
    # leaving the runtime waited for the titles, made in the background
    return turns


def describe(turn: Turn) -> list[tuple[str, Any]]:
    """``(kind, text)`` lines for printing a turn: user, tool calls and assistant text."""
    lines: list[tuple[str, Any]] = [("user", turn.saved[0].text)]
    for message in turn.saved[1:]:
        for call in message.tool_calls:
            lines.append(("tool", f"{call.name}({call.args})"))
        if message.text:
            lines.append(("assistant", message.text))
    return lines
