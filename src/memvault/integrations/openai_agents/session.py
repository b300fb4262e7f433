""":class:`MemvaultSession`: the Agents SDK's ``Session`` protocol over a memvault thread."""

from __future__ import annotations

from collections.abc import Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

from memvault.errors import MissingExtraError, ValidationError
from memvault.integrations.openai_agents.ids import thread_id_for
from memvault.integrations.openai_agents.items import item_to_message, message_to_items
from memvault.model import Message, valid_id

if TYPE_CHECKING:
    from agents.items import TResponseInputItem
    from agents.memory import Session, SessionSettings

    from memvault.memory import Memory

__all__ = ["MemvaultSession"]


def _sdk_settings() -> ModuleType:
    """The SDK's ``agents.memory.session_settings`` module, or MissingExtraError without the SDK."""
    try:
        from agents.memory import session_settings
    except ImportError as exc:
        raise MissingExtraError(
            "MemvaultSession (the OpenAI Agents SDK session)", "agents", "openai-agents"
        ) from exc
    return session_settings


class MemvaultSession:
    """The OpenAI Agents SDK ``Session`` protocol over the memvault thread of ``session_id``
    under ``resource_id`` (the thread is created by the first :meth:`add_items`).

    ``session_id`` is any string, as for the SDK's own sessions; :attr:`thread_id` is the
    memvault thread that stores it (:func:`~memvault.integrations.openai_agents.thread_id_for`:
    the same string when it is a valid memvault id). ``session_settings`` (a ``SessionSettings``
    or its dict) sets the default ``limit`` of :meth:`get_items`, as for the SDK's own sessions.
    Items keep the thread's order (``seq``). Several sessions (and other memvault code) may
    share one :class:`~memvault.Memory`.
    """

    session_settings: SessionSettings | None = None

    def __init__(
        self,
        session_id: str,
        memory: Memory,
        *,
        resource_id: str,
        session_settings: SessionSettings | Mapping[str, Any] | None = None,
    ) -> None:
        settings = _sdk_settings()
        if not isinstance(session_id, str):
            raise ValidationError(f"session_id must be a string, got {type(session_id).__name__}")
        self.session_id = session_id
        self.thread_id = thread_id_for(session_id)
        self.resource_id = valid_id(resource_id, "resource_id")
        self.memory = memory
        if isinstance(session_settings, Mapping):
            session_settings = dict(session_settings)
        self.session_settings = cast(
            "SessionSettings",
            settings.SessionSettings()
            if session_settings is None
            else settings.coerce_session_settings(session_settings),
        )

    def __repr__(self) -> str:
        return f"MemvaultSession(session_id={self.session_id!r}, resource_id={self.resource_id!r})"

    async def _messages(self, last_n: int | None = None) -> list[Message]:
        return await self.memory.get_messages(
            thread_id=self.thread_id, resource_id=self.resource_id, last_n=last_n
        )

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The conversation so far, oldest first. ``limit`` (default: the settings' ``limit``)
        keeps the latest N items, still in chronological order; ``None`` or a negative limit
        means all of them, ``0`` none (as the SDK's SQLiteSession)."""
        wanted = _sdk_settings().resolve_session_limit(limit, self.session_settings)
        if wanted is None or wanted < 0:
            return _items(await self._messages())
        if wanted == 0:
            return []
        window = wanted
        while True:  # a foreign message may make no item: widen the window until N items
            messages = await self._messages(last_n=window)
            items = _items(messages)
            if len(items) >= wanted or len(messages) < window:
                return items[-wanted:]
            window *= 2

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append the items, one message each, in one transaction (all or nothing). An item
        ``json.dumps`` refuses by type raises :class:`~.items.ItemNotJSONError` (a TypeError, as
        the SDK's own sessions); nothing is written then."""
        if not items:
            return
        messages = [item_to_message(item) for item in items]
        await self.memory.save_messages(messages, thread_id=self.thread_id, resource_id=self.resource_id)

    async def pop_item(self) -> TResponseInputItem | None:
        """Delete the newest message and return its item (``None`` when the session is empty).

        A message saved by other code that stands for no item is deleted and skipped; one that
        stands for several items is deleted whole and its last item returned."""
        while True:
            newest = await self._messages(last_n=1)
            if not newest:
                return None
            message = newest[0]
            removed = await self.memory.delete_messages(
                [message.id], thread_id=self.thread_id, resource_id=self.resource_id
            )
            if not removed:
                continue  # another writer popped it first: look again
            items = message_to_items(message)
            if items:
                return cast("TResponseInputItem", items[-1])

    async def clear_session(self) -> None:
        """Delete every message of the thread (the thread itself, its title and metadata stay)."""
        await self.memory.clear_thread(thread_id=self.thread_id, resource_id=self.resource_id)


def _items(messages: list[Message]) -> list[TResponseInputItem]:
    return [cast("TResponseInputItem", item) for message in messages for item in message_to_items(message)]


if TYPE_CHECKING:

    def _is_a_session(session: MemvaultSession) -> Session:
        return session  # mypy checks that MemvaultSession meets the SDK's Session protocol
