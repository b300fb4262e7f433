"""A real OpenAI-compatible embeddings server on 127.0.0.1, for the OpenAI embedder's tests.

It speaks ``POST /v1/embeddings``: vectors are derived deterministically from each text (so a test
can compute the expected vector), are deliberately not unit length (so normalisation is tested),
and the ``data`` list is returned shuffled with each item's ``index`` (so ordering is tested).
Responses can be scripted (``server.fail_next(...)``) to test retries and errors.
"""

from __future__ import annotations

import hashlib
import json
import random
import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

DEFAULT_DIMENSIONS = 8
DROP = 0
"""A scripted status that closes the connection without any answer."""


def raw_vector(text: str, dimensions: int = DEFAULT_DIMENSIONS) -> list[float]:
    """The server's vector for ``text``: deterministic, in [-5, 5], not normalised."""
    digest = hashlib.sha256(text.encode()).digest()
    while len(digest) < dimensions:
        digest += hashlib.sha256(digest).digest()
    return [(byte - 127.5) / 25.5 for byte in digest[:dimensions]]


def expected_vector(text: str, dimensions: int = DEFAULT_DIMENSIONS) -> np.ndarray:
    """What the embedder should return for ``text``: the server's vector, unit length, float32."""
    vector = np.array(raw_vector(text, dimensions), dtype=np.float64)
    return (vector / np.linalg.norm(vector)).astype(np.float32)


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class Scripted:
    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)


class EmbeddingsServer:
    """The server: ``url`` is the API root (``.../v1``); ``requests`` records every request."""

    def __init__(self, *, dimensions: int = DEFAULT_DIMENSIONS, seed: int = 7) -> None:
        self.dimensions = dimensions
        self.requests: list[Recorded] = []
        self.shuffled_responses = 0
        self._script: deque[Scripted] = deque()
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except json.JSONDecodeError:
                    body = {"unparsed": raw.decode(errors="replace")}
                status, payload, headers = server._answer(self.path, dict(self.headers.items()), body)
                if status == DROP:  # hang up without answering: the client sees a connection error
                    self.close_connection = True
                    return
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.02},
            name="fake-embeddings",
            daemon=True,
        )

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def fail_next(self, status: int, body: Any = None, headers: dict[str, str] | None = None) -> None:
        """Answer the next request with ``status`` (and a JSON ``body``) instead of embeddings."""
        payload = (
            body
            if isinstance(body, bytes)
            else json.dumps(body or {"error": {"message": "scripted"}}).encode()
        )
        with self._lock:
            self._script.append(
                Scripted(status, payload, {"Content-Type": "application/json", **(headers or {})})
            )

    def _answer(self, path: str, headers: dict[str, str], body: Any) -> tuple[int, bytes, dict[str, str]]:
        with self._lock:
            self.requests.append(Recorded(path, {k.lower(): v for k, v in headers.items()}, body))
            scripted = self._script.popleft() if self._script else None
        if scripted is not None:
            return scripted.status, scripted.body, scripted.headers
        json_headers = {"Content-Type": "application/json"}
        if path != "/v1/embeddings":
            return 404, json.dumps({"error": {"message": f"no route {path}"}}).encode(), json_headers
        texts = body.get("input") if isinstance(body, dict) else None
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts) or "model" not in body:
            message = {"error": {"message": "'input' must be a list of strings and 'model' is required"}}
            return 400, json.dumps(message).encode(), json_headers
        dimensions = int(body.get("dimensions") or self.dimensions)
        data = [
            {"object": "embedding", "index": i, "embedding": raw_vector(text, dimensions)}
            for i, text in enumerate(texts)
        ]
        with self._lock:
            self._random.shuffle(data)
            if [item["index"] for item in data] != list(range(len(data))):
                self.shuffled_responses += 1
        answer = {
            "object": "list",
            "data": data,
            "model": body["model"],
            "usage": {"prompt_tokens": len(texts), "total_tokens": len(texts)},
        }
        return 200, json.dumps(answer).encode(), json_headers

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


@contextmanager
def running_server(**kwargs: Any) -> Iterator[EmbeddingsServer]:
    server = EmbeddingsServer(**kwargs)
    server.start()
    try:
        yield server
    finally:
        server.stop()
