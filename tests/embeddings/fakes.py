"""Stand-ins for optional packages, each honestly named as such where a test uses it."""

from __future__ import annotations

import importlib.machinery
import sys
import types
from collections.abc import Iterator
from typing import Any, ClassVar

import numpy as np
import pytest


def hide_package(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """Make ``import name`` fail as if the package were not installed (for this test only).

    ``sys.modules[name] = None`` is how Python marks a module that cannot be imported: both
    ``import name`` (ImportError) and ``importlib.util.find_spec(name)`` (None) then see it missing.
    """
    for loaded in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        monkeypatch.delitem(sys.modules, loaded)
    monkeypatch.setitem(sys.modules, name, None)


class FakeTextEmbedding:
    """A stand-in for ``fastembed.TextEmbedding`` (fastembed cannot fetch models here).

    ``fail`` makes construction raise the kind of error fastembed raises when it cannot download a
    model; otherwise ``embed`` yields deterministic, unnormalised vectors.
    """

    fail: Exception | None = None
    created: ClassVar[list[dict[str, Any]]] = []

    def __init__(self, **kwargs: Any) -> None:
        if FakeTextEmbedding.fail is not None:
            raise FakeTextEmbedding.fail
        FakeTextEmbedding.created.append(kwargs)

    def embed(self, documents: list[str], batch_size: int = 256) -> Iterator[np.ndarray]:
        for text in documents:
            yield np.array([len(text) + 1.0, 2.0, 0.0], dtype=np.float32)


def install_fake_fastembed(monkeypatch: pytest.MonkeyPatch, *, fail: Exception | None = None) -> None:
    """Put a fake ``fastembed`` module (exposing :class:`FakeTextEmbedding`) in ``sys.modules``."""
    module = types.ModuleType("fastembed")
    module.__spec__ = importlib.machinery.ModuleSpec("fastembed", None)
    module.TextEmbedding = FakeTextEmbedding  # type: ignore[attr-defined]
    monkeypatch.setattr(FakeTextEmbedding, "fail", fail)
    monkeypatch.setattr(FakeTextEmbedding, "created", [])
    monkeypatch.setitem(sys.modules, "fastembed", module)
