"""LangGraph on memvault: one SQLite file holds the conversation (a memvault thread), the
graph's checkpoints (MemvaultSaver) and its long-term memory (MemvaultStore).

A tiny graph without a model: each turn stores what the user said as a fact, saves the exchange
in the memvault thread, and answers with the stored fact that best matches the question.
Run it twice with the same file: the second process resumes the same graph thread.

    pip install 'memvault[langgraph]'
    python examples/langgraph_memory.py sqlite:///app.db "I like green tea" "What do I like to drink?"
"""

from __future__ import annotations

import asyncio
import operator
import sys
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore

from memvault import Memory, Message
from memvault.integrations.langgraph import MemvaultSaver, MemvaultStore

RESOURCE, THREAD = "ada", "chat-1"


class State(TypedDict):
    said: Annotated[list[str], operator.add]
    turns: int


def build(memory: Memory) -> Any:
    async def answer(state: State, *, store: BaseStore) -> dict[str, Any]:
        question = state["said"][-1]
        best = await store.asearch(("facts",), query=question, limit=1)
        reply = f"You told me: {best[0].value['text']}" if best else "Tell me something first."
        await store.aput(("facts",), f"fact-{state['turns']}", {"text": question})
        await memory.save_messages([Message.user(question), Message.assistant(reply)],
                                   thread_id=THREAD, resource_id=RESOURCE)
        return {"said": [reply], "turns": state["turns"] + 1}

    graph = StateGraph(State)
    graph.add_node("answer", answer)
    graph.add_edge(START, "answer")
    graph.add_edge("answer", END)
    return graph.compile(checkpointer=MemvaultSaver(memory, resource_id=RESOURCE),
                         store=MemvaultStore(memory, resource_id=RESOURCE))


async def main(url: str, lines: list[str]) -> None:
    async with await Memory.open(url) as memory:
        graph = build(memory)
        config: Any = {"configurable": {"thread_id": THREAD}}
        before = (await graph.aget_state(config)).values.get("turns", 0)
        print(f"graph turns so far: {before}")
        for line in lines:
            state = await graph.ainvoke({"said": [line], "turns": before}, config)
            before = state["turns"]
            print(f"user: {line}\nbot: {state['said'][-1]}")
        stored = await memory.get_messages(thread_id=THREAD, resource_id=RESOURCE)
        print(f"graph turns: {before}; messages in the memvault thread: {len(stored)}")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2:]))
