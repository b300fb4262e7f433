"""Converters between memvault messages and the message formats of LLM APIs."""

from memvault.formats.openai_chat import from_openai, to_openai

__all__ = ["from_openai", "to_openai"]
