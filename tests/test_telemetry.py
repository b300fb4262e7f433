"""OpenTelemetry spans: every memory operation opens one with ids, counts and timings, failures
are recorded on it, and nothing is recorded without an SDK configured by the application."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from memvault import Memory, Message, ThreadNotFoundError, telemetry

EXPORTER = InMemorySpanExporter()


@pytest.fixture
def spans(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    """An application's SDK with an in-memory exporter (the global provider can be set once per
    process, so the tracer memvault uses is pointed at this provider for the test)."""
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(EXPORTER))
    monkeypatch.setattr(telemetry, "_tracers", [provider.get_tracer("memvault")])
    EXPORTER.clear()
    yield EXPORTER
    EXPORTER.clear()


async def test_operations_open_spans_with_ids_counts_and_timings(
    spans: InMemorySpanExporter, tmp_path: Path
) -> None:
    memory = await Memory.open(f"sqlite:///{tmp_path / 't.db'}")
    await memory.save_messages([Message.user("green tea"), Message.assistant("noted")],
                               thread_id="t1", resource_id="ada")
    await memory.get_messages(thread_id="t1", resource_id="ada")
    await memory.recall(resource_id="ada", thread_id="t1", query="tea")
    await memory.close()
    by_name = {s.name: s for s in spans.get_finished_spans()}
    assert {"memvault.save_messages", "memvault.get_messages", "memvault.recall"} <= set(by_name)
    saved = by_name["memvault.save_messages"].attributes or {}
    assert saved["memvault.resource_id"] == "ada" and saved["memvault.thread_id"] == "t1"
    assert saved["memvault.input_count"] == 2 and saved["memvault.count"] == 2
    assert isinstance(saved["memvault.duration_ms"], float) and saved["memvault.duration_ms"] >= 0
    assert (by_name["memvault.get_messages"].attributes or {})["memvault.count"] == 2
    assert "memvault.count" in (by_name["memvault.recall"].attributes or {})
    for span in spans.get_finished_spans():  # no message text in any attribute
        assert not any("green tea" in str(v) for v in (span.attributes or {}).values())


async def test_a_failure_is_recorded_on_its_span(spans: InMemorySpanExporter) -> None:
    memory = await Memory.open("memory://")
    with pytest.raises(ThreadNotFoundError):
        await memory.update_thread(thread_id="missing", resource_id="ada", title="x")
    await memory.close()
    (span,) = [s for s in spans.get_finished_spans() if s.name == "memvault.update_thread"]
    assert span.status.status_code is StatusCode.ERROR
    assert [e.name for e in span.events] == ["exception"]


async def test_operations_are_logged_at_debug(caplog: pytest.LogCaptureFixture) -> None:
    memory = await Memory.open("memory://")
    with caplog.at_level(logging.DEBUG, logger="memvault"):
        await memory.get_thread(thread_id="t", resource_id="ada")
    await memory.close()
    assert any(r.getMessage().startswith("get_thread took") for r in caplog.records)


def test_without_an_sdk_nothing_is_recorded() -> None:
    assert not trace.get_tracer("memvault").start_span("x").is_recording()
