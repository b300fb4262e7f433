"""A ``Session`` for the OpenAI Agents SDK that keeps the conversation in a memvault thread.

Hand a :class:`MemvaultSession` to the SDK's runner and every item of the run (the user's input,
the model's messages, function calls and their outputs, reasoning, ...) is saved as one memvault
:class:`~memvault.model.Message` of the thread named by ``session_id`` under ``resource_id``::

    memory = await Memory.open("sqlite:///app.db")
    session = MemvaultSession("chat-1", memory, resource_id="ada")
    result = await Runner.run(agent, "Hi", session=session)

It is a drop-in for the SDK's own ``SQLiteSession``: it stores every item that one stores and
gives it back as that one does (:mod:`.items`: each item stored once, exactly, with a readable
and searchable view as the message's parts), takes any ``session_id`` (:mod:`.ids`), and
refuses what that one refuses with the same exception types (a non-JSON item is a
:class:`TypeError`, as :class:`~.items.ItemNotJSONError`).

The SDK is imported only when a session is made: without it,
:class:`~memvault.errors.MissingExtraError` names the ``agents`` extra, which ships
``openai-agents``.
"""

from memvault.integrations.openai_agents.ids import session_id_for, thread_id_for
from memvault.integrations.openai_agents.items import (
    ITEM_KEY,
    STORED_KEY,
    ItemNotJSONError,
    item_to_message,
    message_to_items,
)
from memvault.integrations.openai_agents.session import MemvaultSession

__all__ = [
    "ITEM_KEY",
    "STORED_KEY",
    "ItemNotJSONError",
    "MemvaultSession",
    "item_to_message",
    "message_to_items",
    "session_id_for",
    "thread_id_for",
]
