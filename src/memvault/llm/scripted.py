"""A :class:`~memvault.llm.base.Model` that answers from a script: for tests, the demo and offline chat.

Nothing leaves the machine and nothing is random: the same script gives the same answers.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re
from collections.abc import AsyncIterator, Callable, Sequence
from typing import TypeAlias

from memvault.errors import ConfigurationError, ModelError
from memvault.llm.base import (
    ChatMessage,
    Finish,
    ModelEvent,
    ModelResponse,
    ReasoningDelta,
    TextDelta,
    Tool,
    ToolCall,
    ToolCallEvent,
    Usage,
)
from memvault.rules.tokens import MESSAGE_OVERHEAD, estimate_tokens

__all__ = ["Reply", "ReplyFunction", "ScriptedModel"]

ReplyFunction: TypeAlias = Callable[[list[ChatMessage], list[Tool] | None], str | ModelResponse]
"""Computes a reply from the call's messages and tools (``None`` when no tools were given)."""

Reply: TypeAlias = str | ModelResponse | ReplyFunction
"""One scripted reply: a text, a whole response, or a function that makes one."""

_CHUNKS = re.compile(r"\S+\s*|\s+")


class ScriptedModel:
    """Answers each call with the next reply of a script.

    ``ScriptedModel(["Hi!", ModelResponse(tool_calls=(...,)), lambda messages, tools: ...])`` uses
    the replies in order; when they are used up, a call raises :class:`ModelError`, or, with
    ``cycle=True``, starts over. ``ScriptedModel(function)`` answers every call with
    ``function(messages, tools)``.

    A text reply becomes ``ModelResponse(text=..., finish_reason="stop")``. A reply whose usage is
    all zeros gets usage estimated with :func:`memvault.rules.tokens.estimate_tokens` (the messages'
    text for input, the reply's text, reasoning and tool calls for output); ``model`` is filled
    with :attr:`name` when unset. ``max_tokens`` is accepted and ignored.

    Every call is recorded in :attr:`calls` as ``(messages, tools)``, deep copies of what was
    passed (``tools`` is ``None`` when none were given). :meth:`stream` yields the reasoning and
    then the text in word-sized pieces (whitespace kept: the pieces join back to the text), then
    one :class:`ToolCallEvent` per call, then :class:`Finish`.
    """

    def __init__(
        self, replies: Sequence[Reply] | ReplyFunction, *, cycle: bool = False, name: str = "scripted"
    ) -> None:
        if isinstance(replies, str | ModelResponse):
            raise ConfigurationError("ScriptedModel: pass a list of replies, e.g. ScriptedModel([reply])")
        if callable(replies):
            self._function: ReplyFunction | None = replies
            self._replies: list[Reply] = []
        else:
            self._function = None
            self._replies = list(replies)
            for reply in self._replies:
                if not (isinstance(reply, str | ModelResponse) or callable(reply)):
                    raise ConfigurationError(
                        f"ScriptedModel: a reply must be a str, a ModelResponse or a function, got {reply!r}"
                    )
            if cycle and not self._replies:
                raise ConfigurationError("ScriptedModel: cycle=True needs at least one reply")
        self._cycle = cycle
        self._name = name
        self._used = 0
        self.calls: list[tuple[list[ChatMessage], list[Tool] | None]] = []

    @property
    def name(self) -> str:
        return self._name

    def __repr__(self) -> str:
        script = "function" if self._function is not None else f"{len(self._replies)} replies"
        return f"ScriptedModel({script}, calls={len(self.calls)}, cycle={self._cycle})"

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[Tool] | None = None,
        max_tokens: int | None = None,
    ) -> ModelResponse:
        tool_list = list(tools) if tools is not None else None
        self.calls.append((copy.deepcopy(list(messages)), copy.deepcopy(tool_list)))
        reply = self._next_reply()
        if callable(reply):
            reply = reply(list(messages), tool_list)
        if isinstance(reply, str):
            reply = ModelResponse(text=reply)
        if not isinstance(reply, ModelResponse):
            raise ModelError(
                f"ScriptedModel: a reply function returned {reply!r}; return a str or a ModelResponse"
            )
        if reply.usage == Usage():
            reply = dataclasses.replace(reply, usage=Usage(_input_tokens(messages), _output_tokens(reply)))
        if reply.model is None:
            reply = dataclasses.replace(reply, model=self._name)
        return reply

    async def stream(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[Tool] | None = None,
        max_tokens: int | None = None,
    ) -> AsyncIterator[ModelEvent]:
        response = await self.complete(messages, tools=tools, max_tokens=max_tokens)
        for piece in _CHUNKS.findall(response.reasoning):
            yield ReasoningDelta(piece)
        for piece in _CHUNKS.findall(response.text):
            yield TextDelta(piece)
        for call in response.tool_calls:
            yield ToolCallEvent(call)
        yield Finish(response)

    def _next_reply(self) -> Reply:
        if self._function is not None:
            return self._function
        if self._used >= len(self._replies) and not self._cycle:
            raise ModelError(
                f"ScriptedModel: the script has {len(self._replies)} replies and all were used "
                f"(this is call {len(self.calls)}); add replies or pass cycle=True"
            )
        self._used += 1
        return self._replies[(self._used - 1) % len(self._replies)]


def _input_tokens(messages: Sequence[ChatMessage]) -> int:
    total = 0
    for message in messages:
        content = message.get("content")
        text = content if isinstance(content, str) else json.dumps(content) if content else ""
        calls = message.get("tool_calls")
        total += (
            MESSAGE_OVERHEAD + estimate_tokens(text) + (estimate_tokens(json.dumps(calls)) if calls else 0)
        )
    return total


def _output_tokens(response: ModelResponse) -> int:
    return (
        estimate_tokens(response.text)
        + estimate_tokens(response.reasoning)
        + sum(_call_tokens(call) for call in response.tool_calls)
    )


def _call_tokens(call: ToolCall) -> int:
    return estimate_tokens(call.name) + estimate_tokens(json.dumps(call.args, ensure_ascii=False))
