"""A :class:`~memvault.llm.base.Model` for any OpenAI-compatible chat-completions server.

Speaks ``POST {base_url}/chat/completions`` over httpx (extra ``openai``; the OpenAI SDK is not
needed): OpenAI itself, vLLM, llama.cpp, Ollama, LM Studio, LiteLLM and other proxies. The
conversation leaves the machine only to the configured ``base_url``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memvault.errors import ConfigurationError, ModelError
from memvault.llm.base import (
    ChatMessage,
    Finish,
    FinishReason,
    ModelEvent,
    ModelResponse,
    ReasoningDelta,
    TextDelta,
    Tool,
    ToolCall,
    ToolCallEvent,
    Usage,
)
from memvault.llm.http import OpenAIHttp, error_text, require_httpx, snippet

if TYPE_CHECKING:
    import httpx

__all__ = ["OpenAIChatModel"]

_PATH = "/chat/completions"
_FINISH_REASONS: dict[str, FinishReason] = {
    "stop": "stop",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "length": "length",
    "content_filter": "content_filter",
}
_RESERVED = frozenset({"model", "messages", "tools", "stream", "stream_options"})
_HINT_400 = (
    "check the model name, the messages (OpenAI chat format: every tool message answers a "
    "tool_call_id of the assistant message before it), the tools' JSON schemas and max_tokens"
)


class OpenAIChatModel:
    """A chat model behind an OpenAI-compatible ``/chat/completions`` endpoint.

    :meth:`complete` sends one request and returns the whole :class:`ModelResponse`. :meth:`stream`
    sends ``"stream": true`` with ``"stream_options": {"include_usage": true}`` and yields
    :class:`TextDelta` and :class:`ReasoningDelta` as the server sends them, each
    :class:`ToolCallEvent` once its call is complete (when the choice's ``finish_reason`` arrives,
    or at the end of the stream), then exactly one :class:`Finish` holding the whole response.

    The request body is ``{"model", "messages", "tools"?, "max_tokens"?}`` (``tools`` only when
    some are given, ``max_tokens`` only when not ``None``) merged over ``extra_body``, which can
    add fields such as ``{"temperature": 0.2}``, ``{"reasoning_effort": "low"}`` or a default
    ``max_tokens`` (a call's own ``max_tokens`` wins). ``extra_body`` cannot set ``model``,
    ``messages``, ``tools``, ``stream`` or ``stream_options``, which memvault decides.

    Reasoning text is read from ``reasoning_content`` (DeepSeek, vLLM) or ``reasoning``
    (OpenRouter, Ollama). Tool-call arguments that are not a JSON object come back as
    ``{"_raw": "<the text>"}``; a call without an id gets ``call_<index>``. A finish reason
    outside the known ones becomes ``"other"``.

    Retries: a 429, a 5xx or a connection error is retried up to ``max_retries`` times (default
    3) with exponential backoff and jitter, or after the server's ``Retry-After``; a stream is
    retried only until its response headers arrive, never once it has started. Any other failure
    raises :class:`memvault.errors.ModelError` saying what to check (API key, base URL, the
    server's own message).

    Options:
        model: the server's model name, e.g. ``"gpt-4o-mini"`` or ``"qwen2.5:7b"``.
        base_url: the API root, ending before ``/chat/completions`` (default: env
            ``OPENAI_BASE_URL``, else ``https://api.openai.com/v1``); e.g.
            ``"http://127.0.0.1:11434/v1"`` for Ollama.
        api_key: sent as ``Authorization: Bearer <key>`` (default: env ``OPENAI_API_KEY``);
            required for api.openai.com only.
        timeout: seconds per request; for a stream, the longest wait between two reads (default 60).
        max_retries, backoff_base, backoff_max, max_retry_after: the retry policy (see above;
            ``backoff_base * 2**attempt`` seconds capped at ``backoff_max``, a Retry-After capped
            at ``max_retry_after``).
        client: an ``httpx.AsyncClient`` to use instead of one the model owns (the caller closes it).
        extra_body: fields added to every request body.
        headers: extra HTTP headers (an organisation id, a proxy token).
        sleep: the coroutine that waits between retries (default ``asyncio.sleep``).

    Example::

        async with OpenAIChatModel("gpt-4o-mini") as model:
            reply = await model.complete([{"role": "user", "content": "Hello"}])
            print(reply.text, reply.usage.total_tokens)
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 3,
        client: httpx.AsyncClient | None = None,
        extra_body: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        backoff_base: float = 0.5,
        backoff_max: float = 20.0,
        max_retry_after: float = 60.0,
        sleep: Callable[[float], Awaitable[None]] | None = None,
    ) -> None:
        require_httpx("OpenAI-compatible chat models")
        if not isinstance(model, str) or not model.strip():
            raise ConfigurationError(f"OpenAIChatModel: model must be a non-empty string, got {model!r}")
        if extra_body is not None and not isinstance(extra_body, Mapping):
            raise ConfigurationError(f"OpenAIChatModel: extra_body must be a dict, got {extra_body!r}")
        reserved = sorted(_RESERVED.intersection(extra_body or {}))
        if reserved:
            raise ConfigurationError(
                f"OpenAIChatModel: extra_body cannot set {', '.join(reserved)}: memvault sets them "
                "(pass the model as the first argument and tools to complete() or stream())"
            )
        self._model = model
        self._extra_body = dict(extra_body or {})
        self._http = OpenAIHttp(
            owner="OpenAIChatModel",
            service="chat server",
            error=ModelError,
            model=model,
            base_url=base_url,
            api_key=api_key,
            timeout=timeout,
            max_retries=max_retries,
            backoff_base=backoff_base,
            backoff_max=backoff_max,
            max_retry_after=max_retry_after,
            headers=headers,
            client=client,
            sleep=sleep,
        )
        self._hints = {
            400: _HINT_400,
            422: _HINT_400,
            413: "the request is too large: send fewer or shorter messages",
        }

    @property
    def name(self) -> str:
        return self._model

    @property
    def base_url(self) -> str:
        return self._http.base_url

    def __repr__(self) -> str:  # never shows the key
        return f"OpenAIChatModel(model={self._model!r}, base_url={self.base_url!r})"

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[Tool] | None = None,
        max_tokens: int | None = None,
    ) -> ModelResponse:
        response = await self._http.post(_PATH, self._payload(messages, tools, max_tokens), hints=self._hints)
        body = self._http.json(response, _PATH)
        choice = self._first_choice(body)
        message = choice.get("message")
        if not isinstance(message, dict):
            raise _bad_reply(self._http.where(_PATH), self._model, 'a choice without a "message" object')
        calls = tuple(
            _tool_call(call.get("id"), _function(call).get("name"), _function(call).get("arguments"), i)
            for i, call in enumerate(message.get("tool_calls") or [])
            if isinstance(call, dict)
        )
        return ModelResponse(
            text=_text(message.get("content")),
            tool_calls=calls,
            usage=_usage(body.get("usage")),
            finish_reason=_finish_reason(choice.get("finish_reason"), calls),
            reasoning=_text(message.get("reasoning_content") or message.get("reasoning")),
            model=body.get("model") if isinstance(body.get("model"), str) else self._model,
        )

    async def stream(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[Tool] | None = None,
        max_tokens: int | None = None,
    ) -> AsyncIterator[ModelEvent]:
        import httpx

        payload = self._payload(messages, tools, max_tokens)
        payload["stream"] = True
        payload["stream_options"] = {"include_usage": True}
        response = await self._http.post(_PATH, payload, stream=True, hints=self._hints)
        state = _StreamState(self._model, self._http.where(_PATH))
        try:
            async for line in response.aiter_lines():
                for event in state.feed(line):
                    yield event
                if state.done:
                    break
        except httpx.HTTPError as exc:
            raise ModelError(
                f"the connection to {self._http.where(_PATH)} broke in the middle of a streamed answer "
                f"({type(exc).__name__}: {exc}); the answer is incomplete: try again, and check the "
                "server's logs or a proxy's timeouts if it keeps happening"
            ) from exc
        finally:
            await response.aclose()
        if not state.done and state.finish_reason is None:
            raise _bad_reply(
                state.where, self._model, "a stream that ended before its finish_reason or [DONE]"
            )
        for event in state.flush_tool_calls():
            yield event
        yield Finish(state.response())

    async def aclose(self) -> None:
        """Close the HTTP client this model owns (a ``client`` passed in is left open)."""
        await self._http.aclose()

    async def __aenter__(self) -> OpenAIChatModel:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # -- internals ---------------------------------------------------------------------------

    def _payload(
        self, messages: Sequence[ChatMessage], tools: Sequence[Tool] | None, max_tokens: int | None
    ) -> dict[str, Any]:
        payload: dict[str, Any] = {**self._extra_body, "model": self._model, "messages": list(messages)}
        if tools:
            payload["tools"] = list(tools)
        if max_tokens is not None:
            payload["max_tokens"] = max_tokens
        return payload

    def _first_choice(self, body: Any) -> dict[str, Any]:
        where = self._http.where(_PATH)
        if isinstance(body, dict) and "choices" not in body and error_text(body):
            raise ModelError(f"{where} answered with an error: {error_text(body)}")
        choices = body.get("choices") if isinstance(body, dict) else None
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise _bad_reply(where, self._model, f"a body without choices ({snippet(json.dumps(body))!r})")
        choice: dict[str, Any] = choices[0]
        return choice


def _bad_reply(where: str, model: str, what: str) -> ModelError:
    return ModelError(
        f"{where} sent {what}; check that base_url points at an OpenAI-compatible chat-completions API "
        f"and that model {model!r} is a chat model"
    )


@dataclass
class _PartialCall:
    """A tool call being assembled from stream fragments."""

    id: str = ""
    name: str = ""
    arguments: str = ""
    emitted: bool = False


class _StreamState:
    """What a chat-completions stream has said so far; :meth:`feed` takes one SSE line."""

    def __init__(self, model: str, where: str) -> None:
        self.model = model
        self.where = where
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.calls: dict[int, _PartialCall] = {}
        self.usage = Usage()
        self.finish_reason: FinishReason | None = None
        self.done = False

    def feed(self, line: str) -> list[ModelEvent]:
        """Events for one line: ``data: {...}`` chunks are read, ``data: [DONE]`` ends the stream,
        anything else (blank lines, ``: comments``, ``event:`` fields) is ignored."""
        if not line.startswith("data:"):
            return []
        data = line[5:].strip()
        if data == "[DONE]":
            self.done = True
            return []
        try:
            chunk = json.loads(data)
        except json.JSONDecodeError:
            chunk = None
        if not isinstance(chunk, dict):
            raise _bad_reply(
                self.where, self.model, f"a stream event that is not a JSON object ({snippet(data)!r})"
            )
        if "choices" not in chunk and error_text(chunk):
            raise ModelError(f"{self.where} sent an error in the middle of a stream: {error_text(chunk)}")
        if isinstance(chunk.get("model"), str):
            self.model = chunk["model"]
        if isinstance(chunk.get("usage"), dict):
            self.usage = _usage(chunk["usage"])
        events: list[ModelEvent] = []
        choices = chunk.get("choices") or []
        for choice in choices[:1] if isinstance(choices, list) else []:
            if isinstance(choice, dict):
                events.extend(self._choice(choice))
        return events

    def _choice(self, choice: dict[str, Any]) -> list[ModelEvent]:
        events: list[ModelEvent] = []
        delta = choice.get("delta")
        if not isinstance(delta, dict):
            delta = {}
        reasoning = _text(delta.get("reasoning_content") or delta.get("reasoning"))
        if reasoning:
            self.reasoning.append(reasoning)
            events.append(ReasoningDelta(reasoning))
        text = _text(delta.get("content"))
        if text:
            self.text.append(text)
            events.append(TextDelta(text))
        for position, fragment in enumerate(delta.get("tool_calls") or []):
            if isinstance(fragment, dict):
                self._fragment(fragment, position)
        if choice.get("finish_reason"):
            self.finish_reason = _finish_reason(choice["finish_reason"], ())
            events.extend(self.flush_tool_calls())
        return events

    def _fragment(self, fragment: dict[str, Any], position: int) -> None:
        index = fragment.get("index")
        partial = self.calls.setdefault(index if isinstance(index, int) else position, _PartialCall())
        function = _function(fragment)
        if isinstance(fragment.get("id"), str) and not partial.id:
            partial.id = fragment["id"]
        if isinstance(function.get("name"), str) and not partial.name:
            partial.name = function["name"]
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            partial.arguments += arguments
        elif isinstance(arguments, dict):  # a server that sends the object whole
            partial.arguments += json.dumps(arguments)

    def flush_tool_calls(self) -> list[ModelEvent]:
        """A :class:`ToolCallEvent` for each call not yet emitted, in index order."""
        events: list[ModelEvent] = []
        for index in sorted(self.calls):
            partial = self.calls[index]
            if not partial.emitted:
                partial.emitted = True
                events.append(ToolCallEvent(_tool_call(partial.id, partial.name, partial.arguments, index)))
        return events

    def response(self) -> ModelResponse:
        calls = tuple(
            _tool_call(self.calls[i].id, self.calls[i].name, self.calls[i].arguments, i)
            for i in sorted(self.calls)
        )
        return ModelResponse(
            text="".join(self.text),
            tool_calls=calls,
            usage=self.usage,
            finish_reason=self.finish_reason or _finish_reason(None, calls),
            reasoning="".join(self.reasoning),
            model=self.model,
        )


def _text(content: Any) -> str:
    """Message content as text: a string, or the text parts of a list of content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part["text"] for part in content if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return ""


def _function(call: dict[str, Any]) -> dict[str, Any]:
    function = call.get("function")
    return function if isinstance(function, dict) else {}


def _tool_call(call_id: Any, name: Any, arguments: Any, index: int) -> ToolCall:
    """A :class:`ToolCall`; a missing id becomes ``call_<index>``, bad arguments ``{"_raw": text}``."""
    return ToolCall(
        id=call_id if isinstance(call_id, str) and call_id else f"call_{index}",
        name=name if isinstance(name, str) else "",
        args=_arguments(arguments),
    )


def _arguments(arguments: Any) -> dict[str, Any]:
    if isinstance(arguments, dict):
        return arguments
    if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
        return {}
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    try:
        decoded = json.loads(text)
    except json.JSONDecodeError:
        return {"_raw": text}
    return decoded if isinstance(decoded, dict) else {"_raw": text}


def _usage(usage: Any) -> Usage:
    if not isinstance(usage, dict):
        return Usage()

    def count(key: str) -> int:
        value = usage.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0

    return Usage(input_tokens=count("prompt_tokens"), output_tokens=count("completion_tokens"))


def _finish_reason(reason: Any, calls: Sequence[ToolCall]) -> FinishReason:
    """The server's finish reason mapped to ours; none at all means the answer ended normally."""
    if reason is None:
        return "tool_calls" if calls else "stop"
    return _FINISH_REASONS.get(reason, "other") if isinstance(reason, str) else "other"
