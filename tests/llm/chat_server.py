"""A real OpenAI-compatible chat-completions server on 127.0.0.1, for the chat model's tests.

It speaks ``POST /v1/chat/completions``, whole (JSON) or streamed (Server-Sent Events when the
request says ``"stream": true``). Answers are scripted with :meth:`ChatServer.reply` (text,
reasoning, tool calls, usage, finish reason) and :meth:`ChatServer.fail_next` (an error status, a
raw body, or :data:`DROP`); with nothing scripted it echoes the last user message. A streamed body
is cut into many small HTTP chunks (``wire_chunk`` bytes), so SSE lines arrive split across
reads, and text and tool-call arguments are sent in small fragments (``piece`` characters), so
JSON arguments arrive split mid-token. Every request is recorded in ``requests``.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from itertools import zip_longest
from typing import Any

DROP = 0
"""A scripted status that closes the connection without any answer."""


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class Answer:
    """A successful answer, served as JSON or as a stream, whichever the request asks for.

    ``tool_calls`` are ``(id, name, arguments text)``. ``cut_after``: stream only this many bytes of
    the body, then hang up. ``interleave``: alternate the fragments of parallel tool calls.
    """

    text: str = ""
    reasoning: str = ""
    reasoning_field: str = "reasoning_content"
    tool_calls: list[tuple[str, str, str]] = field(default_factory=list)
    usage: tuple[int, int] | None = (9, 4)
    finish_reason: str | None = None
    piece: int = 3
    interleave: bool = False
    cut_after: int | None = None
    done: bool = True

    @property
    def finish(self) -> str:
        return self.finish_reason or ("tool_calls" if self.tool_calls else "stop")

    def usage_json(self) -> dict[str, int]:
        prompt, completion = self.usage or (0, 0)
        return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


@dataclass
class Failure:
    status: int
    body: bytes
    headers: dict[str, str]


class ChatServer:
    """The server: ``url`` is the API root (``.../v1``); ``requests`` records every request."""

    def __init__(self, *, wire_chunk: int = 7) -> None:
        self.wire_chunk = wire_chunk
        self.requests: list[Recorded] = []
        self._script: deque[Answer | Failure] = deque()
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # many tiny writes must not wait for ACKs

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                try:
                    body = json.loads(raw)
                except json.JSONDecodeError:
                    body = {"unparsed": raw.decode(errors="replace")}
                server._serve(self, self.path, dict(self.headers.items()), body)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-chat", daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def reply(self, text: str = "", **options: Any) -> None:
        """Answer the next request with an :class:`Answer` (``options`` are its other fields)."""
        with self._lock:
            self._script.append(Answer(text, **options))

    def fail_next(
        self, status: int, body: Any = None, headers: dict[str, str] | None = None, *, sse: bool = False
    ) -> None:
        """Answer the next request with ``status`` and ``body`` (JSON, or raw bytes as given);
        ``sse=True`` labels a raw body ``text/event-stream``. ``DROP`` hangs up instead."""
        payload = (
            body
            if isinstance(body, bytes)
            else json.dumps(body or {"error": {"message": "scripted"}}).encode()
        )
        content_type = "text/event-stream" if sse else "application/json"
        with self._lock:
            self._script.append(Failure(status, payload, {"Content-Type": content_type, **(headers or {})}))

    # -- serving -----------------------------------------------------------------------------

    def _serve(self, handler: BaseHTTPRequestHandler, path: str, headers: dict[str, str], body: Any) -> None:
        with self._lock:
            self.requests.append(Recorded(path, {k.lower(): v for k, v in headers.items()}, body))
            scripted = self._script.popleft() if self._script else None
        if isinstance(scripted, Failure):
            if scripted.status == DROP:
                handler.close_connection = True
                return
            _send(handler, scripted.status, scripted.body, scripted.headers)
            return
        if path != "/v1/chat/completions":
            _send(handler, 404, json.dumps({"error": {"message": f"Not found: {path}"}}).encode())
            return
        if not isinstance(body.get("model"), str) or not isinstance(body.get("messages"), list):
            message = {"error": {"message": "'model' and 'messages' are required"}}
            _send(handler, 400, json.dumps(message).encode())
            return
        answer = scripted or Answer(f"echo: {_last_user_text(body['messages'])}")
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            self._stream(handler, _sse(answer, body["model"], include_usage), answer.cut_after)
        else:
            _send(handler, 200, json.dumps(_completion(answer, body["model"])).encode())

    def _stream(self, handler: BaseHTTPRequestHandler, payload: bytes, cut_after: int | None) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        limit = len(payload) if cut_after is None else cut_after
        for start in range(0, limit, self.wire_chunk):
            chunk = payload[start : min(start + self.wire_chunk, limit)]
            handler.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            handler.wfile.flush()
        if cut_after is None:
            handler.wfile.write(b"0\r\n\r\n")
        else:  # hang up mid-body: the chunked body never ends
            handler.close_connection = True

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


def _send(
    handler: BaseHTTPRequestHandler, status: int, payload: bytes, headers: dict[str, str] | None = None
) -> None:
    handler.send_response(status)
    for name, value in (headers or {"Content-Type": "application/json"}).items():
        handler.send_header(name, value)
    handler.send_header("Content-Length", str(len(payload)))
    handler.end_headers()
    handler.wfile.write(payload)


def _last_user_text(messages: list[Any]) -> str:
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            return str(message.get("content"))
    return ""


def _completion(answer: Answer, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": answer.text or None}
    if answer.reasoning:
        message[answer.reasoning_field] = answer.reasoning
    if answer.tool_calls:
        message["tool_calls"] = [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
            for call_id, name, arguments in answer.tool_calls
        ]
    body: dict[str, Any] = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": answer.finish}],
    }
    if answer.usage is not None:
        body["usage"] = answer.usage_json()
    return body


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def _sse(answer: Answer, model: str, include_usage: bool) -> bytes:
    """The whole SSE body: a comment, a role chunk, reasoning, text, tool-call fragments, the
    finish chunk, a usage chunk (when asked for) and ``[DONE]`` (unless ``done=False``)."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": "chatcmpl-test",
            "object": "chat.completion.chunk",
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    events: list[dict[str, Any]] = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({answer.reasoning_field: p}) for p in _pieces(answer.reasoning, answer.piece)]
    events += [chunk({"content": p}) for p in _pieces(answer.text, answer.piece)]
    per_call = [
        [{"index": i, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}]
        + [{"index": i, "function": {"arguments": p}} for p in _pieces(arguments, answer.piece)]
        for i, (call_id, name, arguments) in enumerate(answer.tool_calls)
    ]
    ordered = (
        [f for group in zip_longest(*per_call) for f in group if f is not None]
        if answer.interleave
        else [f for fragments in per_call for f in fragments]
    )
    events += [chunk({"tool_calls": [fragment]}) for fragment in ordered]
    events.append(chunk({}, answer.finish))
    if include_usage and answer.usage is not None:
        events.append({"id": "chatcmpl-test", "model": model, "choices": [], "usage": answer.usage_json()})
    lines = [": keep-alive\n\n"] + [f"data: {json.dumps(event)}\n\n" for event in events]
    if answer.done:
        lines.append("data: [DONE]\n\n")
    return "".join(lines).encode()


@contextmanager
def running_server(**kwargs: Any) -> Iterator[ChatServer]:
    server = ChatServer(**kwargs)
    server.start()
    try:
        yield server
    finally:
        server.stop()
