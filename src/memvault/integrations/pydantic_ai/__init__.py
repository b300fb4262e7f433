"""Pydantic AI agents with memvault memory.

* :class:`MemvaultHistory`: an agent's message history (``ModelMessage`` lists: prompts, text,
  tool calls and returns, thinking, files, ...) kept exactly in a memvault thread, loaded back
  as ``message_history``;
* :func:`memory_instructions`: the working memory and recalled older messages as dynamic
  instructions; :func:`memory_toolset`: the same as tools the model calls.

::

    memory = await Memory.open("sqlite:///app.db")
    history = MemvaultHistory(memory, thread_id="chat-1", resource_id="ada")
    agent = Agent(model, instructions=memory_instructions(memory, resource_id="ada", thread_id="chat-1"))
    result = await agent.run("Hi", message_history=await history.load())
    await history.save(result.new_messages())

Pydantic AI is imported only when used: without it,
:class:`~memvault.errors.MissingExtraError` names the ``pydantic-ai`` extra.
"""

from memvault.integrations.pydantic_ai.context import memory_instructions, memory_toolset, recalled_text
from memvault.integrations.pydantic_ai.history import MemvaultHistory
from memvault.integrations.pydantic_ai.messages import KEY, to_memvault, to_pydantic_ai

__all__ = [
    "KEY",
    "MemvaultHistory",
    "memory_instructions",
    "memory_toolset",
    "recalled_text",
    "to_memvault",
    "to_pydantic_ai",
]
