"""Every embeddings test runs offline: no hub access, so the local models must come from the
installed package, a local folder or an ONNX export."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(scope="module", autouse=True)
def offline() -> Iterator[None]:
    """No hub access: everything must come from the installed package or a local folder."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HUB_OFFLINE", "1")
        patch.setenv("TRANSFORMERS_OFFLINE", "1")
        yield
