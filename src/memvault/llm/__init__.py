"""Language models for the runtime: the :class:`Model` protocol and its implementations."""

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

__all__ = [
    "ChatMessage",
    "Finish",
    "FinishReason",
    "Model",
    "ModelEvent",
    "ModelResponse",
    "ReasoningDelta",
    "TextDelta",
    "Tool",
    "ToolCall",
    "ToolCallEvent",
    "Usage",
]
