"""``memvault reindex``: rebuild the derived data (full-text index, vectors) from the messages."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.console import Console

from memvault.cli.common import run
from memvault.embeddings import probe, resolve_embedder
from memvault.memory import Memory
from memvault.options import MemoryOptions


def reindex(
    db: Annotated[str | None, typer.Option(help="Store URL (default: $MEMVAULT_DB or the "
                                           "file in the user's data folder).")] = None,
    embedder: Annotated[str | None, typer.Option(
        help="Embed every message with this embedder, e.g. sentence-transformers/all-MiniLM-L6-v2 "
             "(the stored vectors of any other model are dropped first).")] = None,
    embed_context: Annotated[int | None, typer.Option(
        "--embed-context", min=0,
        help="With --embedder: how many earlier messages of its thread to embed with each "
             "message (MemoryOptions.embed_context; default: the library's). Open the memory "
             "with the same value afterwards.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the counts as JSON.")] = False,
) -> None:
    """Rebuild the full-text index and, with --embedder, the vectors, e.g. after changing models."""
    counts = run(_reindex(db, embedder, embed_context))
    if as_json:
        typer.echo(json.dumps(counts))
        return
    console = Console()
    console.print(f"full-text index: {counts['search_rows']:,} messages")
    if "vectors" in counts:
        console.print(f"vectors: {counts['vectors']:,} messages embedded with {embedder}")


async def _reindex(url: str | None, spec: str | None, embed_context: int | None = None) -> dict[str, int]:
    embedder = None if spec is None else resolve_embedder(spec)
    options = None if embed_context is None else MemoryOptions(embed_context=embed_context)
    if embedder is not None:  # vectors of another model would be refused on open
        await probe(embedder)  # a failing embedder drops nothing
        async with await Memory.open(url) as plain:
            await plain.clear_embeddings()
    async with await Memory.open(url, embedder=embedder, options=options) as memory:
        return await memory.reindex()
