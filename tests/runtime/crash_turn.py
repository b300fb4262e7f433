"""A scripted streaming turn, for the crash tests: run in a child process that the test kills.

``python crash_turn.py <db> <dangling> <delay> <debounce>`` opens the SQLite file, seeds a buffer
from the thread (``retry=True``: a rerun overwrites an earlier attempt), then applies
:data:`EVENTS` one by one through a :class:`ConversationBuffer` and a :class:`PersistQueue`,
sleeping ``delay`` seconds after each. It prints one line per step, flushed at once:

- ``ready`` once the store is open, ``event <i>`` after event ``i`` is applied and scheduled,
- ``saved <json>`` after each completed write: ``{message id: digest of its parts}``,
- ``done`` after the final flush.

The test imports this module too: it replays :data:`EVENTS` to know every state of the turn.
"""

from __future__ import annotations

import asyncio
import hashlib
import sys
from collections.abc import Callable
from typing import Any

from memvault import Memory, Message, ToolCallPart, ToolResultPart
from memvault.runtime import ConversationBuffer, PersistQueue

THREAD, RESOURCE, TURN = "t-crash", "r-crash", "turn-1"
MAIN, RESEARCHER, CRITIC = None, "researcher", "critic"

Event = tuple[Any, ...]


def _text(agent: str | None, *deltas: str) -> list[Event]:
    return [("text", d, agent) for d in deltas]


EVENTS: list[Event] = [
    ("user", "Plan a weekend in Lisbon for me"),
    ("reasoning", "A trip plan: flights, hotel, weather, food. ", MAIN),
    *_text(MAIN, "Let me look ", "at flights first. "),
    ("call", "c1", "search_flights", {"to": "LIS"}, MAIN),
    ("result", "c1", {"flights": 3}),
    *_text(MAIN, "Found 3 flights. ", "Now hotels ", "and the weather. "),
    ("call", "c2", "search_hotels", {"city": "Lisbon"}, MAIN),
    ("call", "c3", "weather", {"city": "Lisbon"}, MAIN),
    ("result", "c3", "sunny, 24°C"),
    *_text(MAIN, "(hotels are slow) "),
    ("result", "c2", {"hotels": 5}),
    ("call", "c4", "delegate", {"agent": RESEARCHER, "task": "restaurants"}, MAIN),
    *_text(RESEARCHER, "Looking for ", "restaurants. ", "Checking reviews. "),
    ("call", "c5", "reviews", {"q": "Alfama"}, RESEARCHER),
    ("result", "c5", ["Taberna", "Tasca"]),
    *_text(RESEARCHER, "Top pick: ", "Taberna. "),
    ("result", "c4", "Taberna"),
    # a new main message holding only a dangling call: the critic's message after it must wait
    ("call", "c6", "delegate", {"agent": CRITIC, "task": "review the plan"}, MAIN),
    *_text(CRITIC, "A plan ", "with Alfama ", "looks good, ", "book early. "),
    ("result", "c6", "approved"),
    *_text(MAIN, "Here is ", "your plan: ", "fly Friday. ", "Day 1: ", "Belém. ", "Day 2: ", "Sintra. ",
           "Dinner ", "at Taberna. ", "Enjoy!"),
]

ORDER = ["turn-1-u0", "turn-1-a0", "turn-1-a1", "turn-1-a2", "turn-1-a3", "turn-1-a4"]


def apply(buffer: ConversationBuffer, event: Event) -> None:
    """Apply one scripted event to the buffer."""
    kind, *args = event
    if kind == "user":
        buffer.add_user(args[0])
    elif kind == "text":
        buffer.append_text(args[0], agent_id=args[1], agent_name=args[1])
    elif kind == "reasoning":
        buffer.append_reasoning(args[0], agent_id=args[1])
    elif kind == "call":
        call = ToolCallPart(tool_call_id=args[0], name=args[1], args=args[2])
        buffer.add_tool_call(call, agent_id=args[3], agent_name=args[3])
    elif kind == "result":
        buffer.add_tool_result(ToolResultPart(tool_call_id=args[0], output=args[1]))
    else:
        raise AssertionError(f"unknown event {kind!r}")


def digest(message: Message) -> str:
    """A short digest of a message's parts (its content as the store keeps it)."""
    return hashlib.sha1(message.parts_json().encode()).hexdigest()[:16]


async def run_turn(
    db: str, dangling: Any, delay: float, debounce: float, emit: Callable[[str], None]
) -> None:
    """Run the scripted turn against the SQLite file ``db`` (see the module doc)."""
    memory = await Memory.open(f"sqlite:///{db}")
    try:
        history = await memory.get_messages(thread_id=THREAD, resource_id=RESOURCE)
        buffer = ConversationBuffer(THREAD, RESOURCE, history, turn_id=TURN, retry=True)

        def saved(messages: list[Message]) -> None:
            emit("saved " + " ".join(f"{m.id}={digest(m)}" for m in messages))

        async with PersistQueue(memory, debounce=debounce, dangling=dangling, on_save=saved) as queue:
            emit("ready")
            for i, event in enumerate(EVENTS):
                apply(buffer, event)
                queue.schedule_pending(buffer)
                emit(f"event {i}")
                await asyncio.sleep(delay)
        emit("done")
    finally:
        await memory.close()


def _emit(line: str) -> None:
    print(line, flush=True)


if __name__ == "__main__":
    db, dangling, delay, debounce = sys.argv[1:5]
    asyncio.run(run_turn(db, dangling, float(delay), float(debounce), _emit))
