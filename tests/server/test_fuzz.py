"""Generated requests (schemathesis strategies from the app's own OpenAPI document, valid and
invalid by the schema) against the real server: whatever a resource key sends, the answer is
never a 5xx."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from server_live import Live

schemathesis = pytest.importorskip("schemathesis", reason="the fuzz test needs schemathesis (dev tooling)")
from schemathesis.generation import GenerationMode  # noqa: E402

from memvault import Memory  # noqa: E402
from memvault.server import create_app  # noqa: E402


def _openapi() -> dict[str, Any]:
    async def document() -> dict[str, Any]:
        async with await Memory.open("memory://") as memory:
            return create_app(memory).openapi()

    return asyncio.run(document())


SCHEMA = schemathesis.openapi.from_dict(_openapi())
SCHEMA.config.generation.update(modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
OPERATIONS = {f"{op.method.upper()} {op.path}": op for op in
              (result.ok() for result in SCHEMA.get_all_operations())}


@pytest.fixture(scope="module")
def fuzz_key(live: Live) -> str:
    return live.key("fuzzer")


@pytest.mark.parametrize("operation", sorted(OPERATIONS))
def test_no_generated_request_gets_a_server_error(live: Live, fuzz_key: str, operation: str) -> None:
    strategy = OPERATIONS[operation].as_strategy()

    @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(data=st.data())
    def check(data: st.DataObject) -> None:
        case = data.draw(strategy)
        if case.headers:  # the resource header is the key's business (test_auth.py): fuzz the rest
            case.headers.pop("X-Memvault-Resource", None)
        response = case.call(base_url=live.base, headers={"Authorization": f"Bearer {fuzz_key}"})
        assert response.status_code < 500, f"{operation}: {response.status_code} {response.text}"

    check()
