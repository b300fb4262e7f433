"""A small, deterministic stand-in model for offline chat: nothing leaves the machine.

:func:`offline_model` is a :class:`~memvault.llm.scripted.ScriptedModel` whose replies are
computed from what memvault fed it, so that working memory and recall visibly work without a
real model:

- a user message that states facts ("my name is Ada", "I'm Ada", "call me Ada", "I like /
  love / prefer / enjoy green tea", "I live in Lyon") makes it call ``update_working_memory``
  with one line per fact (``- Name: Ada``, ``- Likes: green tea``, ``- Lives in: Lyon``), leaving
  out the lines the working memory already holds (no call when none is new);
- after the tool's result it acknowledges the fact ("Noted, name: Ada. I'll remember that.");
- anything else gets a short answer saying what memory gave it: the working memory's lines
  ("I remember: Name: Ada.") and how many passages recall found ("I recalled 1 passage from
  earlier conversations.");
- a title request (:data:`memvault.runtime.titles.TITLE_INSTRUCTIONS`) is answered with the first five
  words of the message; a summary request with the user lines of the transcript (at most
  :data:`MAX_SUMMARY_CHARS` characters, the newest kept).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from typing import Any

from memvault.llm.base import ChatMessage, ModelResponse, Tool, ToolCall
from memvault.llm.scripted import ScriptedModel
from memvault.rules.working_memory import TOOL_NAME
from memvault.runtime.context import RECALL_MARKER
from memvault.runtime.summaries import DEFAULT_INSTRUCTIONS as SUMMARY_INSTRUCTIONS
from memvault.runtime.titles import TITLE_INSTRUCTIONS

__all__ = ["MAX_SUMMARY_CHARS", "OFFLINE_NAME", "facts_of", "offline_model", "offline_reply"]

OFFLINE_NAME = "offline"
MAX_SUMMARY_CHARS = 2_000

_VALUE = r"([^.!?\n]{1,80}?)\s*(?:[.!?\n]|$)"
_FACTS: tuple[tuple[re.Pattern[str], str], ...] = (
    # a name ends at punctuation, or where the sentence goes on ("... Ada and I like tea")
    (re.compile(r"\bmy name is\s+(\w[\w' -]{0,40}?)\s*(?:[.,;:!?\n]|\s(?:and|but|so|from|who|i)\b|$)",
                re.IGNORECASE), "Name"),
    # "I'm Ada" but not "I'm tired": the name must start with a capital letter
    (re.compile(r"\b(?:[Ii]['\u2019]m|[Ii] am|[Cc]all me)\s+([A-Z][\w'-]{0,40})\b"), "Name"),
    (re.compile(r"\bI (?:really )?(?:like|love|prefer|enjoy)\s+" + _VALUE, re.IGNORECASE), "Likes"),
    (re.compile(r"\bI live in\s+" + _VALUE, re.IGNORECASE), "Lives in"),
)
_WORKING_MEMORY = re.compile(r"<working_memory>\n(.*?)\n?</working_memory>", re.DOTALL)


def offline_model() -> ScriptedModel:
    """The offline stand-in model (see the module docstring), named ``"offline"``."""
    return ScriptedModel(offline_reply, name=OFFLINE_NAME)


def offline_reply(messages: list[ChatMessage], tools: list[Tool] | None) -> str | ModelResponse:
    """The reply to one call (see the module docstring); the same input gives the same reply."""
    first = _content(messages[0]) if messages else ""
    if first == TITLE_INSTRUCTIONS:
        return " ".join(_content(messages[-1]).split()[:5])
    if first == SUMMARY_INSTRUCTIONS:
        return _summary(_content(messages[-1]))
    if messages and messages[-1].get("role") == "tool":
        return _acknowledge(messages)
    user = _last_user_text(messages)
    known = _working_memory(messages).splitlines()
    new = [fact for fact in facts_of(user) if fact not in known]
    offered = {str((tool.get("function") or {}).get("name")) for tool in tools or []}
    if new and TOOL_NAME in offered:
        call_id = "call_" + hashlib.sha1(f"{len(messages)}:{user}".encode()).hexdigest()[:12]
        call = ToolCall(call_id, TOOL_NAME, {"memory": "\n".join(new)})
        return ModelResponse(tool_calls=(call,), finish_reason="tool_calls")
    return _answer(messages)


def facts_of(text: str) -> list[str]:
    """The working-memory lines a user message states (``["- Name: Ada"]``), at most one per kind."""
    facts: list[str] = []
    for pattern, label in _FACTS:
        match = pattern.search(text)
        line = f"- {label}: {match.group(1).strip()}" if match else None
        if line and not any(fact.startswith(f"- {label}:") for fact in facts):
            facts.append(line)
    return facts


def _acknowledge(messages: list[ChatMessage]) -> str:
    """The answer after a tool result: what was noted."""
    for message in reversed(messages):
        for call in message.get("tool_calls") or []:
            arguments = (call.get("function") or {}).get("arguments")
            notes = _notes_of(arguments)
            if notes:
                noted = "; ".join(note[0].lower() + note[1:] for note in notes)
                return f"Noted, {noted}. I'll remember that."
    return "Done."


def _notes_of(arguments: Any) -> list[str]:
    """The lines of an ``update_working_memory`` call's note, without their leading dashes."""
    try:
        args = json.loads(arguments) if isinstance(arguments, str) else arguments
    except ValueError:
        return []
    memory = args.get("memory") if isinstance(args, dict) else None
    lines = memory.splitlines() if isinstance(memory, str) else []
    return [line.strip().lstrip("- ").strip() for line in lines if line.strip().lstrip("- ").strip()]


def _answer(messages: list[ChatMessage]) -> str:
    """A short answer naming what memory fed the call."""
    lines = [line.strip().lstrip("- ").strip() for line in _working_memory(messages).splitlines()]
    known = "; ".join(line for line in lines if line)
    passages = _recalled_passages(messages)
    parts = [f"I remember: {known}." if known else "I don't know anything about you yet."]
    if passages:
        plural = "passage" if passages == 1 else "passages"
        parts.append(f"I recalled {passages} {plural} from earlier conversations.")
    if not known:
        parts.append('Tell me about yourself, e.g. "my name is …" or "I like …".')
    return " ".join(parts)


def _working_memory(messages: Sequence[ChatMessage]) -> str:
    """The working memory shown in the system message ('' when there is none)."""
    for message in messages:
        if message.get("role") == "system":
            match = _WORKING_MEMORY.search(_content(message))
            if match:
                return match.group(1).strip()
    return ""


def _recalled_passages(messages: Sequence[ChatMessage]) -> int:
    """How many recalled passages the context holds (one per recall hit)."""
    for message in messages:
        text = _content(message)
        if message.get("role") == "system" and text.startswith(f"[{RECALL_MARKER}]"):
            return len(re.findall(r"^\((?:earlier conversation|earlier in this conversation), ", text,
                                  re.MULTILINE))
    return 0


def _summary(prompt: str) -> str:
    """A crude summary: the previous summary, then the new user messages, newest kept."""
    previous, _, new = prompt.partition("New messages:\n")
    lines = [previous.removeprefix("Previous summary:\n").strip()]
    users = [block.removeprefix("user: ") for block in new.split("\n\n") if block.startswith("user: ")]
    lines += [f"- {text}" for text in users]
    return "\n".join(lines).strip()[-MAX_SUMMARY_CHARS:]


def _last_user_text(messages: Sequence[ChatMessage]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            return _content(message)
    return ""


def _content(message: ChatMessage) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""
