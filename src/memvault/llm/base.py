"""The model seam: what memvault's runtime needs from a language model, and nothing more.

A :class:`Model` takes a conversation in the OpenAI chat-completions format (a list of message
dicts, as :func:`memvault.formats.openai_chat.to_openai` makes them) and optional tools (OpenAI
function-tool dicts), and answers with text, tool calls and token usage, whole
(:meth:`Model.complete`) or as a stream of events (:meth:`Model.stream`).

Implementations: :class:`memvault.llm.openai.OpenAIChatModel` (any OpenAI-compatible server,
over httpx) and :class:`memvault.llm.scripted.ScriptedModel` (answers from a script: for tests,
the demo and offline chat).

Errors: a model that cannot answer raises :class:`memvault.errors.ModelError` with a message a
user can act on (a wrong base URL, a missing API key, the server's own error text).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

ChatMessage: TypeAlias = dict[str, Any]
"""One message in the OpenAI chat-completions format, e.g. ``{"role": "user", "content": "hi"}``."""

Tool: TypeAlias = dict[str, Any]
"""One tool in the OpenAI format: ``{"type": "function", "function": {"name", "description",
"parameters"}}``."""


@dataclass(frozen=True)
class ToolCall:
    """A call the model asks for: ``args`` is the decoded JSON object of its arguments (a model
    that sends arguments that are not a JSON object gets ``{"_raw": "<the text>"}``)."""

    id: str
    name: str
    args: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Usage:
    """Tokens the call cost, as the server reports them (0 when it does not)."""

    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


FinishReason: TypeAlias = Literal["stop", "tool_calls", "length", "content_filter", "error", "other"]


@dataclass(frozen=True)
class ModelResponse:
    """A whole answer: its text (``""`` when it only calls tools), its reasoning text when the
    server sends one, its tool calls in order, usage and why it stopped."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)
    finish_reason: FinishReason = "stop"
    reasoning: str = ""
    model: str | None = None


@dataclass(frozen=True)
class TextDelta:
    """A piece of the answer's text, as it streams."""

    text: str
    type: Literal["text"] = "text"


@dataclass(frozen=True)
class ReasoningDelta:
    """A piece of the model's reasoning text, when the server streams one."""

    text: str
    type: Literal["reasoning"] = "reasoning"


@dataclass(frozen=True)
class ToolCallEvent:
    """A tool call, emitted once, when its arguments are complete."""

    call: ToolCall
    type: Literal["tool-call"] = "tool-call"


@dataclass(frozen=True)
class Finish:
    """The last event of a stream: the whole response (text, tool calls, usage)."""

    response: ModelResponse
    type: Literal["finish"] = "finish"


ModelEvent: TypeAlias = TextDelta | ReasoningDelta | ToolCallEvent | Finish
"""What :meth:`Model.stream` yields: deltas and tool calls in order, then exactly one
:class:`Finish`."""


@runtime_checkable
class Model(Protocol):
    """A language model (see the module docstring).

    ``name`` names the model (e.g. ``"gpt-4o-mini"``). ``complete`` and ``stream`` take the same
    arguments; ``max_tokens`` caps the answer's length (``None``: the server's default).
    """

    @property
    def name(self) -> str: ...

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[Tool] | None = None,
        max_tokens: int | None = None,
    ) -> ModelResponse: ...

    def stream(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[Tool] | None = None,
        max_tokens: int | None = None,
    ) -> AsyncIterator[ModelEvent]: ...
