"""The MCP server: one resource's memory as Model Context Protocol tools.

Built on the official ``mcp`` SDK (the ``mcp`` extra). :func:`build_server` makes an
``MCPServer`` whose tools all act on the one ``resource_id`` it was built for; no tool argument
names a resource, and a thread of another resource is reported exactly like a missing one.
:func:`serve` opens the store and runs the server over stdio (the default) or streamable HTTP;
``memvault mcp`` is its command.

Tools (each result is structured JSON, described by the tool's output schema):

- ``save_message`` ``{thread_id, text, role="user"}``: save a message (the thread is created
  when new); returns its ``id`` and ``seq``.
- ``list_threads`` ``{limit=20, cursor?}``: the threads, most recently active first.
- ``read_thread`` ``{thread_id, last_n=20}``: the newest messages of a thread, oldest first.
- ``search`` ``{query, thread_id?, limit=10}``: full-text search, best first.
- ``recall`` ``{query, thread_id?, top_k=5}``: the older messages that matter for a query, by
  words (and meaning when the server has an embedder), with scores, source, thread and date.
- ``get_working_memory`` / ``update_working_memory`` ``{content, mode="append", thread_id?}``:
  the note kept about the user (the resource's, or one thread's with ``thread_id``).

Streamable HTTP needs a key: every request carries ``Authorization: Bearer <key>``, a key of
the HTTP API's key records (``memvault keys create --resource RESOURCE``) bound to the served
resource; no key, an unknown or revoked one, an admin key or another resource's key is answered
401 before the MCP transport sees the request. :func:`serve` takes the check as ``key_check``
(``memvault mcp`` passes :func:`memvault.server.keys.admits`). Stdio is local and takes no key.

The caller's mistakes (empty or NUL-bearing text, a message over the store's size limit, an
unknown thread, a bad cursor) come back as tool results with ``isError`` and a message the
model can act on; the server keeps running.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Annotated, Any, Literal

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from memvault import __version__
from memvault.errors import ConfigurationError, MemvaultError, ThreadNotFoundError, ValidationError
from memvault.memory import Memory
from memvault.model import Message, TextPart, check_id
from memvault.options import MemoryOptions
from memvault.recall import RecallHit
from memvault.rules.working_memory import note_scope
from memvault.runtime import tools as memory_tools

Transport = Literal["stdio", "http"]
KeyCheck = Callable[[Memory, str, str], Awaitable[bool]]
"""``(memory, resource_id, secret)``: whether ``secret`` is a valid key bound to ``resource_id``."""
MAX_PAGE = 100
MAX_LAST_N = 200
MAX_MESSAGE_BYTES = 64 * 1024
"""A message's text in a tool result is cut to this many UTF-8 bytes (``truncated: true``)."""
MAX_RESULT_BYTES = 256 * 1024
"""The message text of one tool result stays within this many UTF-8 bytes (older messages, or
lower-ranked hits, are left out and counted in ``omitted``): a result travels twice, as
structured content and as its JSON text (the protocol asks for both), and the pair fits the
official clients' default 1 MiB limit on one message."""


def _cut(text: str, limit: int) -> tuple[str, bool]:
    """``text`` cut to at most ``limit`` UTF-8 bytes (never inside a character), and whether it was."""
    encoded = text.encode()
    if len(encoded) <= limit:
        return text, False
    return encoded[:limit].decode(errors="ignore"), True


def _within_budget(sizes: list[int]) -> int:
    """How many of the items (sized in bytes, in the order they are kept: best or newest first)
    fit in :data:`MAX_RESULT_BYTES`; at least one."""
    total = 0
    for kept, size in enumerate(sizes):
        total += size
        if total > MAX_RESULT_BYTES and kept:
            return kept
    return len(sizes)

# ---------------------------------------------------------------- results (the output schemas)


class SavedMessage(BaseModel):
    """A message just saved: its id, its place in the thread (``seq``) and its time."""

    id: str
    thread_id: str
    seq: int
    created_at: datetime


class ThreadInfo(BaseModel):
    id: str
    title: str | None
    created_at: datetime
    updated_at: datetime


class ThreadList(BaseModel):
    """A page of threads, most recently active first; pass ``next_cursor`` for the next page."""

    threads: list[ThreadInfo]
    next_cursor: str | None


class MessageView(BaseModel):
    """A message as the tools show it: its text cut to :data:`MAX_MESSAGE_BYTES` (``truncated``
    says so)."""

    id: str
    thread_id: str | None
    seq: int | None
    role: str
    text: str
    created_at: datetime
    truncated: bool = False

    @classmethod
    def of(cls, message: Message) -> MessageView:
        text, truncated = _cut(message.text, MAX_MESSAGE_BYTES)
        return cls(id=message.id, thread_id=message.thread_id, seq=message.seq, role=message.role,
                   text=text, created_at=message.created_at, truncated=truncated)

    @property
    def size(self) -> int:
        return len(self.text.encode())


class ThreadMessages(BaseModel):
    """The newest messages, oldest first; ``omitted`` older ones did not fit in one result."""

    thread_id: str
    messages: list[MessageView]
    omitted: int = 0


class SearchMatch(BaseModel):
    score: float
    message: MessageView


class SearchResults(BaseModel):
    """The hits, best first; ``omitted`` lower-ranked ones did not fit in one result."""

    hits: list[SearchMatch]
    omitted: int = 0


class RecallMatch(BaseModel):
    """One recalled message: ``score`` (higher is better, comparable within one answer),
    ``source`` (lexical, vector or both), where and when it was said, and its neighbours."""

    score: float
    source: str
    thread_id: str
    created_at: datetime
    other_thread: bool
    message: MessageView
    context: list[MessageView]

    @classmethod
    def of(cls, hit: RecallHit) -> RecallMatch:
        return cls(score=hit.score, source=hit.source, thread_id=hit.thread_id, created_at=hit.created_at,
                   other_thread=hit.other_thread, message=MessageView.of(hit.message),
                   context=[MessageView.of(m) for m in hit.context or (hit.message,)])


class RecallResults(BaseModel):
    """The hits, best first; ``omitted`` lower-ranked ones did not fit in one result."""

    hits: list[RecallMatch]
    warnings: list[str]
    omitted: int = 0


class WorkingMemory(BaseModel):
    """The working memory's content (``None`` when never written)."""

    thread_id: str | None
    content: str | None


# ---------------------------------------------------------------- argument types (the input schemas)

ThreadId = Annotated[str, Field(description="The conversation's id (any string you choose, up to 256 "
                                            "characters); a new id starts a new conversation.")]
OptionalThread = Annotated[str | None, Field(description="Only this conversation (default: all of them).")]
WmThread = Annotated[str | None, Field(
    description="A conversation's own working memory instead of the user's (default: the user's).")]


@contextmanager
def _tool_errors() -> Iterator[None]:
    """Turn memvault's input errors into ``ToolError``: an ``isError`` result with the message."""
    try:
        yield
    except MemvaultError as error:
        raise ToolError(str(error)) from error


class MemoryServer:
    """The tools of one resource over one :class:`~memvault.memory.Memory`; :meth:`server`
    registers them on an ``MCPServer``. The memory is not closed here: its opener closes it."""

    def __init__(self, memory: Memory, resource_id: str) -> None:
        self.memory = memory
        self.resource_id = check_id(resource_id)
        self._recall_options = memory_tools.MemoryTools(memory, resource_id=self.resource_id).search_options

    def server(self) -> MCPServer:
        """A new ``MCPServer`` named ``memvault`` with the tools registered."""
        server: MCPServer = MCPServer(
            "memvault", version=__version__, log_level="WARNING",
            instructions="Long-term memory of the conversations with one user: save messages, "
            "list and read conversations, search and recall what was said, and keep a working "
            "memory note about the user (read it at the start, update it when you learn something).")
        for tool in (self.save_message, self.list_threads, self.read_thread, self.search, self.recall,
                     self.get_working_memory, self.update_working_memory):
            server.add_tool(tool)
        return server

    async def _check_thread(self, thread_id: str | None) -> None:
        if thread_id is not None and await self.memory.get_thread(
                thread_id=thread_id, resource_id=self.resource_id) is None:
            raise ThreadNotFoundError(thread_id)

    async def save_message(
        self,
        thread_id: ThreadId,
        text: Annotated[str, Field(description="The message's text (not empty).")],
        role: Annotated[Literal["user", "assistant", "system"], Field(
            description="Who said it.")] = "user",
    ) -> SavedMessage:
        """Save one message at the end of a conversation (created when the id is new).
        Returns the message's id and its sequence number in the conversation."""
        with _tool_errors():
            if not text.strip():
                raise ValidationError("text is empty: give the message's text")
            message = Message(role=role, parts=[TextPart(text=text)])
            [saved] = await self.memory.save_messages([message], thread_id=thread_id,
                                                      resource_id=self.resource_id)
        assert saved.seq is not None
        return SavedMessage(id=saved.id, thread_id=thread_id, seq=saved.seq, created_at=saved.created_at)

    async def list_threads(
        self,
        limit: Annotated[int, Field(ge=1, le=MAX_PAGE, description="At most this many.")] = 20,
        cursor: Annotated[str | None, Field(
            description="The next_cursor of the previous page (default: the first page).")] = None,
    ) -> ThreadList:
        """The user's conversations, most recently active first, a page at a time."""
        with _tool_errors():
            page = await self.memory.list_threads(resource_id=self.resource_id, limit=limit, cursor=cursor)
        return ThreadList(next_cursor=page.next_cursor, threads=[
            ThreadInfo(id=t.id, title=t.title, created_at=t.created_at, updated_at=t.updated_at)
            for t in page.threads])

    async def read_thread(
        self,
        thread_id: Annotated[str, Field(description="The conversation's id.")],
        last_n: Annotated[int, Field(ge=1, le=MAX_LAST_N, description="The newest this many.")] = 20,
    ) -> ThreadMessages:
        """The newest messages of a conversation, oldest first. An unknown id is an error."""
        with _tool_errors():
            await self._check_thread(thread_id)
            messages = await self.memory.get_messages(thread_id=thread_id, resource_id=self.resource_id,
                                                      last_n=last_n)
        views = [MessageView.of(m) for m in messages]
        kept = _within_budget([v.size for v in reversed(views)])
        return ThreadMessages(thread_id=thread_id, messages=views[len(views) - kept:],
                              omitted=len(views) - kept)

    async def search(
        self,
        query: Annotated[str, Field(description="Words to look for.")],
        thread_id: OptionalThread = None,
        limit: Annotated[int, Field(ge=1, le=MAX_PAGE, description="At most this many hits.")] = 10,
    ) -> SearchResults:
        """Full-text search of what was said (all conversations, or one), best match first.
        Matches words exactly (with stemming); use recall to find what matters for a question."""
        with _tool_errors():
            if not query.strip():
                raise ValidationError("query is empty: give the words to look for")
            await self._check_thread(thread_id)
            hits = await self.memory.search_messages(resource_id=self.resource_id, query=query,
                                                     thread_id=thread_id, limit=limit)
        matches = [SearchMatch(score=h.score, message=MessageView.of(h.message)) for h in hits]
        kept = _within_budget([m.message.size for m in matches])
        return SearchResults(hits=matches[:kept], omitted=len(matches) - kept)

    async def recall(
        self,
        query: Annotated[str, Field(description="What you are about to answer, or what to remember.")],
        thread_id: Annotated[str | None, Field(
            description="The current conversation: hits elsewhere are marked other_thread.")] = None,
        top_k: Annotated[int, Field(ge=1, le=memory_tools.MAX_SEARCH_RESULTS,
                                    description="At most this many hits.")] = 5,
    ) -> RecallResults:
        """Find the earlier messages, in every conversation with this user, that matter for a
        query: by words and their context (and by meaning when the server has an embedder).
        Each hit comes with its score, source, conversation, date and neighbouring messages."""
        with _tool_errors():
            if not query.strip():
                raise ValidationError("query is empty: say what to recall")
            await self._check_thread(thread_id)
            options = dataclasses.replace(self._recall_options, top_k=top_k)
            result = await self.memory.recall(resource_id=self.resource_id, query=query,
                                              thread_id=thread_id, options=options)
        matches = [RecallMatch.of(h) for h in result.hits]
        kept = _within_budget([sum(v.size for v in m.context) for m in matches])
        return RecallResults(hits=matches[:kept], warnings=list(result.warnings), omitted=len(matches) - kept)

    async def get_working_memory(self, thread_id: WmThread = None) -> WorkingMemory:
        """Read the working memory: the note kept about the user and the task (content is null
        when it was never written)."""
        with _tool_errors():
            await self._check_thread(thread_id)
            content = await self.memory.get_working_memory(resource_id=self.resource_id, thread_id=thread_id,
                                                           scope=note_scope(thread_id))
        return WorkingMemory(thread_id=thread_id, content=content)

    async def update_working_memory(
        self,
        content: Annotated[str, Field(description="The text to add (append) or the whole new note "
                                                  "(replace).")],
        mode: Annotated[Literal["append", "replace"], Field(
            description="append merges into the note (use this). replace is dangerous: it erases "
            "everything not in `content`.")] = "append",
        thread_id: WmThread = None,
    ) -> WorkingMemory:
        """Save what is worth remembering about the user or the task in the working memory.
        By default it is added to the existing note (append). Returns the note as stored."""
        with _tool_errors():
            if not content.strip() and mode == "append":
                raise ValidationError("content is empty: give the text to add")
            await self._check_thread(thread_id)
            note = await self.memory.update_working_memory(
                content, resource_id=self.resource_id, thread_id=thread_id, mode=mode,
                scope=note_scope(thread_id))
        return WorkingMemory(thread_id=thread_id, content=note)


def request_body_limit(options: MemoryOptions) -> int:
    """The largest HTTP request body the streamable HTTP transport reads: twice the largest
    message memvault saves (``max_message_bytes``; JSON escaping can grow text) plus 1 MiB for
    the JSON-RPC envelope, so that a message over memvault's limit gets the tool error that says
    so, as over stdio, and only a body beyond this gets HTTP 413."""
    return 2 * options.max_message_bytes + (1 << 20)


def build_server(memory: Memory, resource_id: str) -> MCPServer:
    """An ``MCPServer`` whose tools act on ``resource_id``'s memory in ``memory``."""
    return MemoryServer(memory, resource_id).server()


async def serve(
    resource_id: str,
    *,
    url: str | None = None,
    transport: Transport = "stdio",
    host: str = "127.0.0.1",
    port: int = 8766,
    embedder: Any = None,
    options: MemoryOptions | None = None,
    key_check: KeyCheck | None = None,
) -> None:
    """Open the store at ``url`` (see :meth:`Memory.open`) and serve ``resource_id``'s memory
    until the client disconnects (stdio: stdin closes) or the process is interrupted (http).
    Streamable HTTP listens on ``http://{host}:{port}/mcp``, 127.0.0.1 by default, and needs
    ``key_check`` (every request's bearer key is checked with it: 401 unless it admits it)."""
    resource_id = check_id(resource_id)
    if transport not in ("stdio", "http"):
        raise ValidationError(f"transport must be 'stdio' or 'http', got {transport!r}")
    if transport == "http" and key_check is None:
        raise ConfigurationError("the HTTP transport needs a key_check: it never serves without keys")
    async with await Memory.open(url, embedder=embedder, options=options) as memory:
        server = build_server(memory, resource_id)
        if transport == "stdio":
            await server.run_stdio_async()
            return
        import uvicorn

        assert key_check is not None
        transport_app = server.streamable_http_app(
            host=host, max_request_body_size=request_body_limit(memory.options))
        app = RequireKey(transport_app, memory, resource_id, key_check)
        await uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning",
                                            server_header=False)).serve()


class RequireKey:
    """ASGI middleware: an HTTP request without a bearer key that ``key_check`` admits for the
    served resource is answered 401 (``WWW-Authenticate: Bearer``) before the MCP transport."""

    def __init__(self, app: Any, memory: Memory, resource_id: str, key_check: KeyCheck) -> None:
        self.app = app
        self.memory = memory
        self.resource_id = resource_id
        self.key_check = key_check

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and not await self._admitted(scope):
            body = json.dumps({"error": {"code": "unauthorized", "message":
                               "send a key of this resource: Authorization: Bearer <key>"}}).encode()
            await send({"type": "http.response.start", "status": 401, "headers": [
                (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                (b"www-authenticate", b"Bearer")]})
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)

    async def _admitted(self, scope: Any) -> bool:
        for name, value in scope.get("headers", []):
            if name == b"authorization":
                scheme, _, secret = value.decode("latin-1").partition(" ")
                if scheme.lower() != "bearer" or not secret.strip():
                    return False
                try:
                    return await self.key_check(self.memory, self.resource_id, secret.strip())
                except MemvaultError:
                    return False
        return False
