"""Adapters that let other agent frameworks keep their conversations in memvault.

* :mod:`memvault.integrations.openai_agents`: :class:`MemvaultSession`, a ``Session`` for the
  OpenAI Agents SDK (``pip install 'memvault[agents]'`` ships the SDK).

Each adapter imports its framework only when used, so importing this package costs nothing.
"""
