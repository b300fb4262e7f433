"""An offline stand-in for a model of the Agents SDK (named as such): it answers each turn with
the outputs it was scripted with, and records the input items it was given."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)


def text_message(text: str, item_id: str = "msg_1") -> ResponseOutputMessage:
    return ResponseOutputMessage(
        id=item_id, type="message", role="assistant", status="completed",
        content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
    )


def function_call(name: str, arguments: str, call_id: str = "call_1") -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(id=f"fc_{call_id}", type="function_call", call_id=call_id,
                                    name=name, arguments=arguments)


class ScriptedModel(Model):
    """Each model call takes the next scripted output (a list of output items)."""

    def __init__(self) -> None:
        self.outputs: list[list[Any]] = []
        self.inputs: list[list[Any]] = []

    def then(self, *output: Any) -> ScriptedModel:
        self.outputs.append(list(output))
        return self

    @property
    def last_input(self) -> list[Any]:
        return self.inputs[-1]

    def _next(self, input: str | list[Any]) -> list[Any]:
        self.inputs.append([{"role": "user", "content": input}] if isinstance(input, str) else list(input))
        return self.outputs.pop(0) if self.outputs else []

    async def get_response(
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        return ModelResponse(output=self._next(input), usage=Usage(), response_id=None)

    async def stream_response(  # type: ignore[override]
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> AsyncIterator[Any]:
        response = Response(
            id="resp_1", created_at=0, model="scripted", object="response", output=self._next(input),
            tool_choice="none", tools=[], top_p=None, parallel_tool_calls=False,
        )
        yield ResponseCompletedEvent(type="response.completed", response=response, sequence_number=0)
