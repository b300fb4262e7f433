"""Converters between memvault messages and the message formats of LLM APIs: OpenAI Chat
Completions (:mod:`.openai_chat`), OpenAI Responses items (:mod:`.openai_responses`) and
Anthropic Messages (:mod:`.anthropic`). Each works on plain dicts and needs no SDK."""

from memvault.formats.anthropic import from_anthropic, to_anthropic
from memvault.formats.openai_chat import from_openai, to_openai
from memvault.formats.openai_responses import from_responses, to_responses

__all__ = ["from_anthropic", "from_openai", "from_responses", "to_anthropic", "to_openai", "to_responses"]
