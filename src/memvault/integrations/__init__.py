"""Adapters that let other agent frameworks keep their conversations in memvault.

* :mod:`memvault.integrations.openai_agents`: :class:`MemvaultSession`, a ``Session`` for the
  OpenAI Agents SDK (``pip install 'memvault[agents]'`` ships the SDK).
* :mod:`memvault.integrations.pydantic_ai`: :class:`MemvaultHistory` (an agent's message history),
  ``memory_instructions`` and ``memory_toolset`` (``pip install 'memvault[pydantic-ai]'``).
* :mod:`memvault.integrations.llama_index`: ``MemvaultChatStore``, a LlamaIndex chat store
  (``pip install 'memvault[llama-index]'``).
* :mod:`memvault.integrations.langgraph`: :class:`MemvaultSaver` (a LangGraph checkpointer) and
  :class:`MemvaultStore` (a LangGraph long-term store) (``pip install 'memvault[langgraph]'``).

Each adapter imports its framework only when used, so importing this package costs nothing.
"""
