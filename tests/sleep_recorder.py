"""A stand-in for ``asyncio.sleep`` in retry tests (the OpenAI embedder, the chat model)."""

from __future__ import annotations


class SleepRecorder:
    """Stands in for asyncio.sleep so retry tests record the waits instead of sleeping."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)
