"""A Pydantic AI agent whose conversation memvault keeps: run
``python examples/pydantic_ai_history.py [sqlite:///path.db]`` (needs
``pip install 'memvault[pydantic-ai]'``; nothing leaves this machine).

The "model" is Pydantic AI's ``FunctionModel``: it calls the ``weather`` tool once, then answers
with what the tool said, and it says how many messages it was given and whether its
instructions hold a recalled message, so you can see memvault feed the history and the older
conversation back. Swap it for ``"openai:gpt-4o-mini"`` (or any model) to use a real one.
"""

from __future__ import annotations

import asyncio
import sys

from pydantic_ai import Agent
from pydantic_ai import messages as pm
from pydantic_ai.models.function import AgentInfo, FunctionModel

from memvault import Memory
from memvault.integrations.pydantic_ai import MemvaultHistory, memory_instructions


def weather(city: str) -> str:
    """The weather in a city."""
    return f"snow in {city}"


def model(messages: list[pm.ModelMessage], info: AgentInfo) -> pm.ModelResponse:
    """Calls ``weather`` for the last word of the prompt, then reports."""
    returns = [p for p in messages[-1].parts if isinstance(p, pm.ToolReturnPart)]
    if not returns:
        prompt = next(p for p in messages[-1].parts if isinstance(p, pm.UserPromptPart))
        city = str(prompt.content).rstrip("?").split()[-1]
        return pm.ModelResponse(parts=[pm.ToolCallPart("weather", {"city": city})])
    recalled = "Bartholomew" in (info.instructions or "")
    text = (
        f"It is {returns[0].content}. (I was given {len(messages)} messages; recalled the cat: {recalled}.)"
    )
    return pm.ModelResponse(parts=[pm.TextPart(text)])


async def main(url: str) -> None:
    async with await Memory.open(url) as memory:
        # an older conversation of the same user, in another thread
        older = MemvaultHistory(memory, thread_id="chat-0", resource_id="ada")
        hello = await Agent(FunctionModel(model), tools=[weather]).run("My cat Bartholomew hates Oslo")
        await older.save(hello.new_messages())

        history = MemvaultHistory(memory, thread_id="chat-1", resource_id="ada")
        agent = Agent(
            FunctionModel(model),
            tools=[weather],
            instructions=memory_instructions(memory, resource_id="ada", thread_id="chat-1"),
        )
        for prompt in ("What is the weather in Oslo?", "And in Rome?"):
            result = await agent.run(prompt, message_history=await history.load())
            await history.save(result.new_messages())
            print(result.output)
        stored = await memory.get_messages(thread_id="chat-1", resource_id="ada")
        print("stored:", ", ".join(m.role for m in stored))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "sqlite:///pydantic_ai_example.db"))
