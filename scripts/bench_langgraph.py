"""How much a memvault-backed LangGraph graph costs per turn, beside LangGraph's in-memory
checkpointer and store, measured side by side in one run (prints JSON).

A three-node graph (remember a fact in the store, search the store, answer) is invoked
``--turns`` times on one thread, for each backend in turn, alternating rounds so that machine
noise falls on all of them alike; the median time per turn is reported, with its ratio to the
in-memory reference, and the time of one ``search`` over ``--items`` stored items.

    PYTHONPATH=src python scripts/bench_langgraph.py --turns 100 --rounds 3
    PYTHONPATH=src python scripts/bench_langgraph.py --postgres postgresql://postgres@127.0.0.1/memvault_test
"""

from __future__ import annotations

import argparse
import asyncio
import json
import operator
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from memvault import Memory
from memvault.integrations.langgraph import MemvaultSaver, MemvaultStore

WORDS = "tea coffee boat lighthouse python garden music river mountain winter".split()


class State(TypedDict):
    said: Annotated[list[str], operator.add]


async def remember(state: State, *, store: BaseStore) -> dict[str, Any]:
    await store.aput(("facts",), f"f{len(state['said'])}", {"text": state["said"][-1]})
    return {}


async def search(state: State, *, store: BaseStore) -> dict[str, Any]:
    found = await store.asearch(("facts",), query=state["said"][-1], limit=3)
    return {"said": [f"found {len(found)}"]}


def graph(checkpointer: Any, store: BaseStore) -> Any:
    builder = StateGraph(State)
    builder.add_node("remember", remember)
    builder.add_node("search", search)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "search")
    builder.add_edge("search", END)
    return builder.compile(checkpointer=checkpointer, store=store)


async def turns(compiled: Any, count: int) -> list[float]:
    config = {"configurable": {"thread_id": uuid.uuid4().hex}}
    times = []
    for i in range(count):
        text = f"{WORDS[i % len(WORDS)]} {WORDS[(i * 7) % len(WORDS)]} number {i}"
        start = time.perf_counter()
        await compiled.ainvoke({"said": [text]}, config)
        times.append(time.perf_counter() - start)
    return times


async def search_time(store: BaseStore, items: int, repeats: int = 20) -> float:
    for i in range(items):
        await store.aput(("docs",), f"d{i}", {"text": f"{WORDS[i % 10]} {WORDS[(i * 3) % 10]} item {i}"})
    times = []
    for i in range(repeats):
        start = time.perf_counter()
        await store.asearch(("docs",), query=WORDS[i % 10], limit=10)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


async def main(args: argparse.Namespace) -> dict[str, Any]:
    folder = Path(tempfile.mkdtemp(prefix="bench-langgraph-"))
    memories = {"sqlite": await Memory.open(f"sqlite:///{folder}/bench.db")}
    schema = f"bench_lg_{uuid.uuid4().hex[:8]}"
    if args.postgres:
        memories["postgres"] = await Memory.open(f"{args.postgres}?schema={schema}")
    makers: dict[str, Callable[[], tuple[Any, BaseStore]]] = {
        "in_memory": lambda: (InMemorySaver(), InMemoryStore())}
    for name, memory in memories.items():
        def make(memory: Memory = memory) -> tuple[Any, BaseStore]:
            rid = f"r{uuid.uuid4().hex[:8]}"
            return MemvaultSaver(memory, resource_id=rid), MemvaultStore(memory, resource_id=rid)
        makers[name] = make
    per_turn: dict[str, list[float]] = {name: [] for name in makers}
    searches: dict[str, list[float]] = {name: [] for name in makers}
    for _ in range(args.rounds):
        for name, make in makers.items():
            saver, store = make()
            per_turn[name].extend(await turns(graph(saver, store), args.turns))
            searches[name].append(await search_time(make()[1], args.items))
    reference = statistics.median(per_turn["in_memory"])
    result = {
        "turns_per_backend": args.turns * args.rounds,
        "items_searched": args.items,
        "turn_ms_median": {n: round(statistics.median(t) * 1000, 3) for n, t in per_turn.items()},
        "turn_ratio_to_in_memory": {
            n: round(statistics.median(t) / reference, 2) for n, t in per_turn.items()},
        "search_ms_median": {n: round(statistics.median(t) * 1000, 3) for n, t in searches.items()},
    }
    for memory in memories.values():
        await memory.close()
    if args.postgres:
        import psycopg

        async with await psycopg.AsyncConnection.connect(args.postgres, autocommit=True) as conn:
            await conn.execute(f"DROP SCHEMA {schema} CASCADE")
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--postgres", default=None, help="a PostgreSQL URL: also measure that store")
    print(json.dumps(asyncio.run(main(parser.parse_args())), indent=2))
