"""Language models for the runtime: the :class:`Model` protocol and its implementations.

- :class:`OpenAIChatModel`: any OpenAI-compatible chat-completions server, over httpx (extra
  ``openai``; importing this package does not need httpx, constructing the model does).
- :class:`ScriptedModel`: answers from a script, offline: for tests, the demo and offline chat.
"""

from memvault.llm.base import (
    ChatMessage,
    Finish,
    FinishReason,
    Model,
    ModelEvent,
    ModelResponse,
    ReasoningDelta,
    TextDelta,
    Tool,
    ToolCall,
    ToolCallEvent,
    Usage,
)
from memvault.llm.openai import OpenAIChatModel
from memvault.llm.scripted import Reply, ReplyFunction, ScriptedModel

__all__ = [
    "ChatMessage",
    "Finish",
    "FinishReason",
    "Model",
    "ModelEvent",
    "ModelResponse",
    "OpenAIChatModel",
    "ReasoningDelta",
    "Reply",
    "ReplyFunction",
    "ScriptedModel",
    "TextDelta",
    "Tool",
    "ToolCall",
    "ToolCallEvent",
    "Usage",
]
