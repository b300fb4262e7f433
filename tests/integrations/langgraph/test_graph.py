"""A small compiled LangGraph graph (no model, no network) with MemvaultSaver and MemvaultStore:
its state survives across turns and across reopening the database, a human-in-the-loop
interrupt resumes from the checkpoint, and nodes write and search long-term memory. Async
(``ainvoke``) over each store; sync (``invoke``) with :class:`memvault.sync.Memory`."""

from __future__ import annotations

import operator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest

from memvault import Memory
from memvault import sync as memvault_sync

pytest.importorskip("langgraph.graph", reason="needs memvault[langgraph]")

from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore
from langgraph.types import Command, interrupt

from memvault.integrations.langgraph import MemvaultSaver, MemvaultStore


class State(TypedDict):
    messages: Annotated[list[str], operator.add]
    turns: int


def remember(state: State, *, store: BaseStore) -> dict[str, Any]:
    said = state["messages"][-1]
    store.put(("facts",), f"turn-{state['turns']}", {"text": said})
    return {"turns": state["turns"] + 1}


def confirm(state: State) -> dict[str, Any]:
    answer = interrupt(f"keep {state['messages'][-1]!r}?")
    return {"messages": [f"confirmed: {answer}"]}


def recall(state: State, *, store: BaseStore) -> dict[str, Any]:
    query = state["messages"][-2]
    best = store.search(("facts",), query=query, limit=1)
    return {"messages": [f"recalled: {best[0].value['text']}"]}


async def arecall(state: State, *, store: BaseStore) -> dict[str, Any]:
    query = state["messages"][-2]
    best = await store.asearch(("facts",), query=query, limit=1)
    return {"messages": [f"recalled: {best[0].value['text']}"]}


async def aremember(state: State, *, store: BaseStore) -> dict[str, Any]:
    await store.aput(("facts",), f"turn-{state['turns']}", {"text": state["messages"][-1]})
    return {"turns": state["turns"] + 1}


def build(asynchronous: bool) -> StateGraph[State]:
    graph = StateGraph(State)
    graph.add_node("remember", aremember if asynchronous else remember)
    graph.add_node("confirm", confirm)
    graph.add_node("recall", arecall if asynchronous else recall)
    graph.add_edge(START, "remember")
    graph.add_edge("remember", "confirm")
    graph.add_edge("confirm", "recall")
    graph.add_edge("recall", END)
    return graph


CONFIG: Any = {"configurable": {"thread_id": "chat-1"}}


async def test_an_async_graph_keeps_its_state_and_memory(any_memory: Memory) -> None:
    graph = build(True).compile(checkpointer=MemvaultSaver(any_memory, resource_id="ada"),
                                store=MemvaultStore(any_memory, resource_id="ada"))
    paused = await graph.ainvoke({"messages": ["I like green tea"], "turns": 0}, CONFIG)
    assert paused["__interrupt__"][0].value == "keep 'I like green tea'?"
    done = await graph.ainvoke(Command(resume="yes"), CONFIG)
    assert done["messages"] == ["I like green tea", "confirmed: yes", "recalled: I like green tea"]

    await graph.ainvoke({"messages": ["My boat is called Nimbus"], "turns": 0}, CONFIG)
    done = await graph.ainvoke(Command(resume="sure"), CONFIG)
    assert done["turns"] == 1  # the input's turns=0 replaced the channel; the node added one
    assert done["messages"][-1] == "recalled: My boat is called Nimbus"
    history = [s async for s in graph.aget_state_history(CONFIG)]
    assert len(history) >= 8 and history[0].values == done

    other = build(True).compile(checkpointer=MemvaultSaver(any_memory, resource_id="bob"),
                                store=MemvaultStore(any_memory, resource_id="bob"))
    assert (await other.aget_state(CONFIG)).values == {}  # bob's chat-1 is not ada's


def test_a_sync_graph_survives_reopening_the_database(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/app.db"
    with memvault_sync.Memory.open(url) as memory:
        graph = build(False).compile(checkpointer=MemvaultSaver(memory, resource_id="ada"),
                                     store=MemvaultStore(memory, resource_id="ada"))
        graph.invoke({"messages": ["I like green tea"], "turns": 0}, CONFIG)
        graph.invoke(Command(resume="yes"), CONFIG)
        graph.invoke({"messages": ["The lighthouse is white"], "turns": 1}, CONFIG)
        assert graph.get_state(CONFIG).next == ("confirm",)  # paused at the interrupt

    with memvault_sync.Memory.open(url) as memory:
        graph = build(False).compile(checkpointer=MemvaultSaver(memory, resource_id="ada"),
                                     store=MemvaultStore(memory, resource_id="ada"))
        assert graph.get_state(CONFIG).next == ("confirm",)
        done = graph.invoke(Command(resume="ok"), CONFIG)
        assert done["messages"][-3:] == ["The lighthouse is white", "confirmed: ok",
                                         "recalled: The lighthouse is white"]
        assert done["turns"] == 2
        facts = MemvaultStore(memory, resource_id="ada").search(("facts",), query="tea")
        assert facts[0].value == {"text": "I like green tea"}


async def test_a_sync_call_on_the_memorys_own_loop_is_refused(any_memory: Memory) -> None:
    from memvault.errors import ConfigurationError

    saver = MemvaultSaver(any_memory, resource_id="ada")
    with pytest.raises(ConfigurationError, match="async methods"):
        saver.get_tuple(CONFIG)


async def test_a_sync_graph_runs_in_a_thread_beside_an_async_memory(any_memory: Memory) -> None:
    import asyncio

    graph = build(False).compile(checkpointer=MemvaultSaver(any_memory, resource_id="ada"),
                                 store=MemvaultStore(any_memory, resource_id="ada"))
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, graph.invoke, {"messages": ["I sail a boat"], "turns": 0}, CONFIG)
    done = await loop.run_in_executor(None, graph.invoke, Command(resume="fine"), CONFIG)
    assert done["messages"][-1] == "recalled: I sail a boat"
    assert (await graph.aget_state(CONFIG)).values == done  # the async methods see the same state
