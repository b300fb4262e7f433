"""``memvault chat``: an interactive terminal chat with memory.

Each line you type is one turn (:meth:`memvault.Memory.turn`): your message is saved, the
context is assembled (working memory, recalled messages from your other conversations, the
thread's recent history), the model's answer streams to the terminal and is saved, and memory
tool calls (e.g. ``update_working_memory``) run and show as dim lines. Lines that start with
``/`` are commands (``/help`` lists them).

The loop logic is :class:`ChatSession` (``await session.handle(line)``), separate from the
terminal I/O in :func:`chat`, which reads lines with ``input()`` and runs each one on one event
loop (an :class:`asyncio.Runner`), so that Ctrl-C during an answer interrupts only that answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import json
import os
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.status import Status
from rich.text import Text

from memvault.demo.offline_model import offline_model
from memvault.errors import MemvaultError, ModelError, ValidationError
from memvault.llm.base import Model, ModelEvent, TextDelta, ToolCallEvent
from memvault.memory import Memory
from memvault.model import Message, Thread, check_id, new_id
from memvault.recall import RecallHit
from memvault.runtime.turn import TurnOptions
from memvault.stores import default_url

DEFAULT_MODEL = "gpt-4o-mini"
OFFLINE_NOTICE = "offline: scripted model, nothing leaves this machine"
INSTRUCTIONS = (
    "You are a helpful assistant talking with the user in a terminal chat. Answer concisely, in "
    "plain text (the terminal does not render Markdown)."
)
SETTLE_SECONDS = 3.0
"""How long ``/threads`` waits for background titles before listing."""

HELP = """\
[bold]commands[/]
  /help         this list
  /memory       the working memory (what the assistant keeps about you)
  /recall       what recall found for your last message (thread, date, text)
  /threads      your conversations, newest first (* marks the current one)
  /new          start a new conversation
  /thread ID    switch to a conversation (its id, a unique start of it, or its number in /threads)
  /quit         leave (also Ctrl-D, or Ctrl-C at the prompt)
Anything else is a message to the assistant."""


@dataclass(frozen=True)
class ModelChoice:
    """The model a chat uses, and how to describe it on start."""

    model: Model
    offline: bool
    description: str


def choose_model(
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    model: str | None = None,
    offline: bool = False,
    env: Mapping[str, str] | None = None,
) -> ModelChoice:
    """The chat's model: the offline stand-in (:func:`memvault.demo.offline_model.offline_model`)
    when ``offline`` is set or when neither a base URL nor an API key is given (as arguments or
    as ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` in ``env``, default ``os.environ``); else an
    :class:`~memvault.llm.openai.OpenAIChatModel` named ``model``, else ``$MEMVAULT_MODEL``,
    else :data:`DEFAULT_MODEL`."""
    env = os.environ if env is None else env
    base_url = base_url or env.get("OPENAI_BASE_URL") or None
    api_key = api_key or env.get("OPENAI_API_KEY") or None
    if offline or (base_url is None and api_key is None):
        return ModelChoice(offline_model(), True, OFFLINE_NOTICE)
    from memvault.llm.openai import OpenAIChatModel

    name = model or env.get("MEMVAULT_MODEL") or DEFAULT_MODEL
    chat_model = OpenAIChatModel(name, base_url=base_url, api_key=api_key)
    return ModelChoice(chat_model, False, f"model {name} at {chat_model.base_url}")


def default_resource() -> str:
    """The OS user name when it is a valid id, else ``"me"``."""
    try:
        return check_id(getpass.getuser())
    except (OSError, KeyError, ValueError, ImportError):
        return "me"


class _AnswerPrinter:
    """Prints one turn's events as they arrive: a spinner until the first one, text deltas on
    one line after an ``assistant>`` label, tool calls as dim lines, errors in red."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.status: Status | None = None
        self.labelled = False
        self.line_open = False  # text was printed and no newline ended it yet
        self.spin()

    def spin(self, message: str = "thinking…") -> None:
        """Show the spinner (it stops at the next output)."""
        self.stop()
        self.status = self.console.status(message)
        self.status.start()

    def stop(self) -> None:
        if self.status is not None:
            self.status.stop()
            self.status = None

    def show(self, event: ModelEvent) -> None:
        if isinstance(event, TextDelta):
            self.text(event.text)
        elif isinstance(event, ToolCallEvent):
            self.stop()
            self.end_line()
            self.console.print(Text(f"· {event.call.name}({_arguments(event.call.args)})", style="dim"))
            self.spin()  # the tool runs, then the model is called again

    def text(self, delta: str) -> None:
        self.stop()
        if not self.labelled:
            self.console.print("[bold blue]assistant>[/] ", end="")
            self.labelled = True
        self.console.out(delta, end="", highlight=False)
        self.line_open = not delta.endswith("\n")

    def error(self, message: str) -> None:
        self.stop()
        self.end_line()
        self.console.print(Text(message, style="bold red"))

    def end_line(self) -> None:
        if self.line_open:
            self.console.print()
            self.line_open = False

    def close(self) -> None:
        self.stop()
        self.end_line()


def _arguments(args: Mapping[str, Any], limit: int = 120) -> str:
    """Tool-call arguments as ``name=<JSON value>, ...``, cut to ``limit`` characters."""
    text = ", ".join(f"{key}={json.dumps(value, ensure_ascii=False)}" for key, value in args.items())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class ChatSession:
    """The chat's logic, without the terminal: :meth:`handle` takes one line and prints to
    ``console`` (default: a new :class:`rich.console.Console` without highlighting).

    ``thread_id`` is the conversation to continue (default: a new one). ``options`` are the
    turns' options (default: :data:`INSTRUCTIONS` as the system prompt, titles on, summaries at
    the library's defaults); ``model`` also makes the titles and summaries.
    """

    def __init__(
        self,
        memory: Memory,
        model: Model,
        *,
        resource_id: str,
        thread_id: str | None = None,
        console: Console | None = None,
        options: TurnOptions | None = None,
    ) -> None:
        from memvault.runtime.context import ContextOptions

        self.memory = memory
        self.model = model
        self.resource_id = check_id(resource_id)
        self.thread_id = check_id(thread_id) if thread_id is not None else new_id()
        self.console = console or Console(highlight=False)
        self.options = options or TurnOptions(context=ContextOptions(instructions=INSTRUCTIONS))
        self.recalled: list[RecallHit] | None = None  # None: no turn yet in this session
        self.listed: list[str] = []  # thread ids in the order /threads showed them
        self._commands: dict[str, Callable[[str], Awaitable[bool]]] = {
            "help": self._help, "memory": self._memory, "recall": self._recall,
            "threads": self._threads, "new": self._new, "thread": self._thread,
            "quit": self._quit, "exit": self._quit,
        }

    async def handle(self, line: str) -> bool:
        """Run one line: a ``/command`` or a message (one turn). Returns ``False`` when the
        chat should end (``/quit``), else ``True``. A blank line does nothing."""
        text = line.strip()
        if not text:
            return True
        if text.startswith("//"):
            await self.say(text[1:])
            return True
        if text.startswith("/"):
            name, _, argument = text[1:].partition(" ")
            command = self._commands.get(name.lower())
            if command is None:
                self.console.print(f"[yellow]unknown command /{escape(name)}[/]: /help lists the commands; "
                                   "to send a message that starts with '/', start it with '//'")
                return True
            return await command(argument.strip())
        await self.say(text)
        return True

    async def say(self, text: str) -> None:
        """One turn: save ``text``, stream the answer, run memory tools. A
        :class:`~memvault.errors.ModelError` is printed in red (the message stays saved, what
        was streamed too); so is a :class:`~memvault.errors.ValidationError` (nothing saved)."""
        printer = _AnswerPrinter(self.console)
        try:
            async with self.memory.turn(thread_id=self.thread_id, resource_id=self.resource_id,
                                        user_message=text, model=self.model, options=self.options) as turn:
                self.recalled = list(turn.context.recalled) if turn.context is not None else []
                async for event in turn.stream():
                    printer.show(event)
        except ModelError as error:
            printer.error(f"model error: {error}")
        except ValidationError as error:  # e.g. a message over the store's size limit
            printer.error(f"not sent: {error}")
        finally:
            printer.close()

    async def describe_thread(self) -> None:
        """One line about the current thread; for a thread with messages, its last four."""
        thread = await self.memory.get_thread(thread_id=self.thread_id, resource_id=self.resource_id)
        if thread is None:
            self.console.print(f"thread [cyan]{escape(self.thread_id)}[/] (new)")
            return
        title = escape(thread.title or "(untitled)")
        self.console.print(f"thread [cyan]{escape(self.thread_id)}[/] · {title}")
        last = await self.memory.get_messages(thread_id=self.thread_id, resource_id=self.resource_id,
                                              last_n=4)
        if any(m.text.strip() for m in last):
            self.console.print(_messages_text(last, style="dim"))

    # commands: each returns False to end the chat

    async def _help(self, argument: str) -> bool:
        self.console.print(HELP)
        return True

    async def _quit(self, argument: str) -> bool:
        return False

    async def _memory(self, argument: str) -> bool:
        note = await self.memory.get_working_memory(resource_id=self.resource_id, thread_id=self.thread_id)
        body = Text(note) if note and note.strip() else Text("(empty: nothing remembered yet)", style="dim")
        self.console.print(Panel(body, title="working memory", title_align="left", expand=False))
        return True

    async def _recall(self, argument: str) -> bool:
        if self.recalled is None:
            self.console.print("[dim]nothing yet: recall runs with each message you send[/]")
        elif not self.recalled:
            self.console.print("[dim]recall found nothing for your last message[/]")
        for hit in self.recalled or []:
            self.console.print(Panel(_hit_text(hit), title=await self._hit_title(hit), title_align="left",
                                     expand=False))
        return True

    async def _hit_title(self, hit: RecallHit) -> str:
        """``thread <id> (<title>) · <date>``, or ``earlier in this thread · <date>``."""
        when = hit.created_at.astimezone().strftime("%Y-%m-%d %H:%M")
        if not hit.other_thread:
            return f"earlier in this thread · {when}"
        thread = await self.memory.get_thread(thread_id=hit.thread_id, resource_id=self.resource_id)
        title = f" ({escape(thread.title)})" if thread is not None and thread.title else ""
        return f"thread {hit.thread_id}{title} · {when}"

    async def _threads(self, argument: str) -> bool:
        await self._settle()
        page = await self.memory.list_threads(resource_id=self.resource_id, limit=20)
        self.listed = [thread.id for thread in page.threads]
        for number, thread in enumerate(page.threads, 1):
            self.console.print(_thread_line(number, thread, current=thread.id == self.thread_id))
        if self.thread_id not in self.listed:
            self.console.print(f"* [cyan]{escape(self.thread_id)}[/] (new: it starts with your next message)")
        if page.next_cursor:
            self.console.print("[dim]… older threads not shown[/]")
        return True

    async def _settle(self) -> None:
        """Wait a little for background work (a new thread's title), never for long."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self.memory.flush()), SETTLE_SECONDS)

    async def _new(self, argument: str) -> bool:
        self.thread_id = new_id()
        self.recalled = None
        self.console.print(f"new thread [cyan]{escape(self.thread_id)}[/]")
        return True

    async def _thread(self, argument: str) -> bool:
        if not argument:
            self.console.print(f"current thread [cyan]{escape(self.thread_id)}[/]; /thread ID switches, "
                               "/threads lists them")
            return True
        found = await self._find_thread(argument)
        if found is None:
            return True
        self.thread_id = found
        self.recalled = None
        await self.describe_thread()
        return True

    async def _find_thread(self, key: str) -> str | None:
        """The thread ``key`` names: an id of this resource, a number of the last ``/threads``
        list, or a unique start of an id among the 100 newest threads; an unknown id is a new
        thread. ``None`` (after saying why) when the start of an id is ambiguous."""
        if await self.memory.get_thread(thread_id=key, resource_id=self.resource_id) is not None:
            return key
        if key.isdigit() and 1 <= int(key) <= len(self.listed):
            return self.listed[int(key) - 1]
        page = await self.memory.list_threads(resource_id=self.resource_id, limit=100)
        matches = [thread.id for thread in page.threads if thread.id.startswith(key)]
        if len(matches) > 1:
            self.console.print(f"[yellow]{len(matches)} threads start with {escape(key)}[/]: "
                               "give more of the id")
            return None
        if matches:
            return matches[0]
        try:
            return check_id(key)
        except ValueError as error:
            self.console.print(f"[yellow]not a thread id: {escape(str(error))}[/]")
            return None


def _hit_text(hit: RecallHit) -> Text:
    """A recalled passage: ``role: text`` for each of its messages that has text."""
    return _messages_text(hit.context or (hit.message,))


def _messages_text(messages: Iterable[Message], style: str = "") -> Text:
    """``role: text`` for each message that has text (tool calls and results left out)."""
    lines = [f"{m.role}: {m.text.strip()}" for m in messages if m.text.strip()]
    return Text("\n".join(lines) or "(no text)", style=style)


def _thread_line(number: int, thread: Thread, *, current: bool) -> Text:
    """``* 1. <id> · <title> · <last activity>`` (``*`` for the current thread)."""
    when = thread.updated_at.astimezone().strftime("%Y-%m-%d %H:%M")
    line = Text(f"{'*' if current else ' '} {number:>2}. ")
    line.append(thread.id, style="cyan")
    line.append(f" · {thread.title or '(untitled)'} · {when}")
    if current:
        line.stylize("bold")
    return line


# the terminal


def chat(
    db: Annotated[str | None, typer.Option(
        help="Store URL (default: $MEMVAULT_DB or the file in the user's data folder).")] = None,
    resource: Annotated[str | None, typer.Option(
        help="Whose memory: the resource id (default: your OS user name, or 'me').")] = None,
    thread: Annotated[str | None, typer.Option(
        help="Continue this thread (default: start a new one).")] = None,
    base_url: Annotated[str | None, typer.Option(
        help="OpenAI-compatible API root, e.g. http://127.0.0.1:11434/v1 "
             "(default: $OPENAI_BASE_URL).")] = None,
    model: Annotated[str | None, typer.Option(
        help=f"Model name (default: $MEMVAULT_MODEL, else {DEFAULT_MODEL}).")] = None,
    api_key: Annotated[str | None, typer.Option(
        help="API key (default: $OPENAI_API_KEY).")] = None,
    offline: Annotated[bool, typer.Option(
        "--offline", help="Use the scripted offline model even when a server is configured.")] = False,
    embedder: Annotated[str | None, typer.Option(
        help="Also recall by meaning with this embedder, "
             "e.g. sentence-transformers/all-MiniLM-L6-v2.")] = None,
) -> None:
    """Chat with a model that remembers you: working memory and recall across conversations.

    Without --base-url and without an API key it runs offline, with a small scripted model.
    """
    console = Console(highlight=False)
    try:
        choice = choose_model(base_url=base_url, api_key=api_key, model=model, offline=offline)
        resource_id = check_id(resource) if resource is not None else default_resource()
        thread_id = check_id(thread) if thread is not None else None
    except (MemvaultError, ValueError) as error:
        console.print(f"[bold red]error:[/] {escape(str(error))}")
        raise typer.Exit(1) from None
    with asyncio.Runner() as runner:
        try:
            memory = runner.run(Memory.open(db, embedder=embedder))
        except MemvaultError as error:
            console.print(f"[bold red]error:[/] {escape(str(error))}")
            raise typer.Exit(1) from None
        session = ChatSession(memory, choice.model, resource_id=resource_id, thread_id=thread_id,
                              console=console)
        try:
            runner.run(_start(session, db or default_url(), choice))
            _loop(runner, session)
        finally:
            runner.run(_close(memory, choice.model))


async def _start(session: ChatSession, url: str, choice: ModelChoice) -> None:
    console = session.console
    console.print(f"[bold]memvault chat[/] · store [cyan]{escape(url)}[/] · resource "
                  f"[cyan]{escape(session.resource_id)}[/]")
    console.print(f"[yellow]{OFFLINE_NOTICE}[/]" if choice.offline else escape(choice.description))
    await session.describe_thread()
    console.print("[dim]/help lists the commands; /quit or Ctrl-D leaves[/]")


def _loop(runner: asyncio.Runner, session: ChatSession) -> None:
    """Read lines until /quit, end of input or Ctrl-C at the prompt; Ctrl-C during an answer
    interrupts that answer only (what was said so far is saved)."""
    with contextlib.suppress(ImportError):
        import readline  # noqa: F401  (line editing and history for input())
    echo = not os.isatty(0)  # piped input: show each line, so the output reads as a transcript
    while True:
        try:
            line = session.console.input("[bold green]you>[/] ")
        except (EOFError, KeyboardInterrupt):
            session.console.print()
            return
        if echo:
            session.console.out(line, highlight=False)
        try:
            if not runner.run(session.handle(line)):
                return
        except KeyboardInterrupt:
            session.console.print("[yellow]interrupted[/]")


async def _close(memory: Memory, model: Model) -> None:
    """Wait for background titles and summaries, close the store and the model's client."""
    try:
        await memory.close()
    finally:
        close = getattr(model, "aclose", None)
        if close is not None:
            await close()
