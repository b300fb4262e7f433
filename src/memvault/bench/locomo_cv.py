"""``memvault bench locomo --cv``: are recall's constants chosen on data they are then judged on?

Leave-one-conversation-out cross-validation over the chosen LoCoMo conversations (five folds
over the development conversations 0-4). For each fold, every tunable constant of
:class:`~memvault.recall.RecallOptions` in :data:`GRID` (and :data:`VECTOR_GRID` with an
embedder) is picked on the *other* conversations by a coordinate-wise search: starting from the
base options (the shipped defaults, or ``--set`` overrides), each constant in turn takes the grid
value that maximises the training questions' mean recall@10 (ties: recall@5, then the value
already held), the others held; up to ``passes`` rounds, stopping early when a round changes
nothing. The held-out conversation is then scored once with the chosen values. Reported: each
fold's chosen values and held-out recall@5 / @10 (overall and by category), the mean of the
held-out folds, the held-out questions pooled by category, the base options' figures on every
conversation beside them, and the value each constant took most often.

The metric is :mod:`memvault.bench.locomo`'s (turn-level evidence recall over the k best hits,
``message_range=0``), through ``Memory.recall``. To keep a grid cheap, every conversation is
ingested once (no constant here changes what is indexed: all are recall-time), its store stays
open for the whole run, and one :class:`_MemoReader` per conversation serves the full-text
searches and neighbour reads of every configuration (the data never changes during the run, so
what it answers is what the store would). Each (configuration, conversation) is scored once and
remembered; the folds run in one process. With an embedder, the questions' vectors are cached
(:class:`~memvault.embeddings.cache.CachedEmbedder`), so each question is embedded once.
No cost call (tokens, ms) is made here: ``memvault bench locomo`` without ``--cv`` reports those.
"""

from __future__ import annotations

import asyncio
import dataclasses
import shutil
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memvault import Memory, MemoryOptions
from memvault.bench.locomo import (
    CATEGORIES,
    Conversation,
    embedder_spec,
    ingest,
    load,
    parse_conversation,
    select,
)
from memvault.errors import MemvaultError, ValidationError
from memvault.recall import RecallOptions
from memvault.recall.options import entity_boost, question_penalty, vector_weight
from memvault.recall.reader import RecallReader
from memvault.stores.passages import Passage, SearchPool

GRID: dict[str, tuple[Any, ...]] = {
    "context_window": (2, 3, 4),
    "context_decay": (0.5, 0.7, 0.85),
    "bm25_b": (0.1, 0.2, 0.3, 0.5),
    "author_boost": (0.0, 0.2, 0.4),
    "date_boost": (1.0, 2.0, 3.0),
    "candidates": (50, 100),
    "thread_boost": (0.0, 0.5, 1.0),
    "entity_boost": (0.0, 0.5),
    "feedback_weight": (0.0, 0.1),
    "thread_diversity": (0.0, 0.05),
    "neighbour_diversity": (0.0, 0.1),
    "question_penalty": (0.0, 0.3, 0.6, 0.9),
}
"""The recall-time constants searched, words only, in this order, each with its small grid
(kept small: on two shared cores one scoring of a conversation takes seconds). Left at their
defaults: ``bm25_k1`` (1.2), ``context_reach`` (2), ``feedback_docs`` (3), ``feedback_terms`` (10)
and the fusion settings. Every constant's grid holds its "off" value (0) where it has one."""

VECTOR_GRID: dict[str, tuple[Any, ...]] = {
    "embed_context": (0, 1, 2),
    "vector_weight": (0.8, 1.0, 1.3, 1.6),
    "vector_context_window": (1, 2, 3),
    "vector_candidates": (25, 50, 100),
    "sentence_weight": (0.0, 0.3, 0.5, 0.7, 1.0),
}
"""Searched too when an embedder is given. ``embed_context`` is
:attr:`memvault.MemoryOptions.embed_context`, not a recall option: it changes what is embedded,
so each of its values has its own ingest of every conversation (:data:`INDEX_OPTIONS`)."""

INDEX_OPTIONS: tuple[str, ...] = ("embed_context",)
"""Grid names that are :class:`~memvault.MemoryOptions` fields fixed when the store is filled:
every value in the grid is ingested (and embedded) once per conversation, and a configuration
is scored on the stores of its value."""

Config = tuple[tuple[str, Any], ...]


class _MemoReader(RecallReader):
    """A :class:`RecallReader` kept for every question and configuration of one conversation:
    its neighbour reads are already remembered by the base class, and full-text searches (with
    their pools) are remembered here by (query, thread, limit[, message range]). Valid because
    nothing is written during a run."""

    def __init__(self, store: Any, resource_id: str) -> None:
        super().__init__(store, resource_id)
        self._searches: dict[tuple[str, str | None, int], list[tuple[Passage, float]]] = {}
        self._pools: dict[tuple[str, str | None, int, int], SearchPool] = {}

    async def search_pool(
        self, query: str, *, thread_id: str | None, limit: int, message_range: int
    ) -> SearchPool:
        key = (query, thread_id, limit, message_range)
        if key not in self._pools:
            self._pools[key] = await super().search_pool(query, thread_id=thread_id, limit=limit,
                                                         message_range=message_range)
        return self._pools[key]

    async def full_text(
        self, query: str, *, thread_id: str | None, limit: int
    ) -> list[tuple[Passage, float]]:
        key = (query, thread_id, limit)
        if key not in self._searches:
            self._searches[key] = await super().full_text(query, thread_id=thread_id, limit=limit)
        return self._searches[key]


@dataclass(frozen=True)
class _Answer:
    """One question's recall@k under one configuration."""

    category: int
    recall: dict[int, float]


@dataclass
class _Open:
    conversation: Conversation
    memory: Memory
    reader: _MemoReader


class _Scorer:
    """Scores (configuration, conversation) pairs once each, over stores opened once."""

    def __init__(self, opened: dict[tuple[str, int], _Open], ks: Sequence[int], fixed: dict[str, Any],
                 embed_context: int = 0) -> None:
        self.opened = opened
        """The stores by (conversation, ``embed_context`` they were embedded with)."""
        self.ids = list(dict.fromkeys(sample_id for sample_id, _ in opened))
        self.embed_context = embed_context
        """The ``embed_context`` of a configuration that does not name one."""
        self.ks = list(ks)
        self.fixed = fixed
        """Options outside the grid that differ from the defaults: added to every configuration."""
        self.answers: dict[tuple[Config, str], list[_Answer]] = {}
        self.seconds = 0.0

    async def score(self, config: Config, sample_id: str) -> list[_Answer]:
        key = (config, sample_id)
        if key not in self.answers:
            began = time.perf_counter()
            values = dict(config)
            opened = self.opened[(sample_id, values.pop("embed_context", self.embed_context))]
            self.answers[key] = await self._run(_config(values), opened)
            self.seconds += time.perf_counter() - began
        return self.answers[key]

    async def _run(self, config: Config, opened: _Open) -> list[_Answer]:
        ranking = {"top_k": max(self.ks), "message_range": 0, "last_n": 0, "working_memory": False}
        options = dataclasses.replace(RecallOptions(), **{**self.fixed, **dict(config), **ranking})
        sample_id = opened.conversation.sample_id
        out = []
        for question in opened.conversation.questions:
            result = await opened.memory.recall(resource_id=sample_id, query=question.text,
                                                options=options, reader=opened.reader)
            found = [h.message.metadata.get("dia_id") for h in result.hits]
            evidence = set(question.evidence)
            out.append(_Answer(question.category,
                               {k: len(evidence & set(found[:k])) / len(evidence) for k in self.ks}))
        return out

    async def pooled(self, config: Config, sample_ids: Sequence[str]) -> list[_Answer]:
        return [a for sample_id in sample_ids for a in await self.score(config, sample_id)]


def summary(answers: Sequence[_Answer], ks: Sequence[int]) -> dict[str, Any]:
    """Questions, recall@k in percent (mean over questions) and the same by category."""
    def figures(group: Sequence[_Answer]) -> dict[str, Any]:
        return {"questions": len(group),
                **{f"recall@{k}": round(100.0 * statistics.fmean(a.recall[k] for a in group), 2)
                   if group else 0.0 for k in ks}}

    categories = sorted({a.category for a in answers})
    return {**figures(answers), "by_category": {
        str(code): {"name": CATEGORIES.get(code, "unknown"),
                    **figures([a for a in answers if a.category == code])} for code in categories}}


def _objective(answers: Sequence[_Answer]) -> tuple[float, float]:
    """What the search maximises: mean recall@10, then mean recall@5 (rounded, so that float
    noise never decides)."""
    if not answers:
        return (0.0, 0.0)
    return (round(statistics.fmean(a.recall[10] for a in answers), 9),
            round(statistics.fmean(a.recall[5] for a in answers), 9))


async def _search(
    scorer: _Scorer, start: dict[str, Any], grid: dict[str, tuple[Any, ...]], train: Sequence[str],
    passes: int, progress: Callable[[str], None] | None, label: str,
) -> dict[str, Any]:
    """Coordinate-wise search over ``grid`` from ``start`` on the ``train`` conversations."""
    current = dict(start)
    best = _objective(await scorer.pooled(_config(current), train))
    for round_number in range(passes):
        changed = False
        for name, values in grid.items():
            for value in values:
                if value == current[name]:
                    continue
                trial = {**current, name: value}
                if progress:
                    progress(f"{label}, round {round_number + 1}: {name}={value} "
                             f"({len(scorer.answers)} scorings, {scorer.seconds:.0f} s)")
                found = _objective(await scorer.pooled(_config(trial), train))
                if found > best:
                    best, current, changed = found, trial, True
        if not changed:
            break
    return current


def _config(values: dict[str, Any]) -> Config:
    return tuple(sorted(values.items()))


async def measure_cv(
    data: str | Path,
    *,
    conversations: str | None = "0-4",
    ks: Sequence[int] = (5, 10),
    embedder: Any = None,
    options: RecallOptions | None = None,
    grid: dict[str, tuple[Any, ...]] | None = None,
    passes: int = 1,
    store: str = "sqlite",
    db_dir: str | Path | None = None,
    progress: Callable[[str], None] | None = None,
    embed_context: int | None = None,
) -> dict[str, Any]:
    """Run the cross-validation (see the module doc) and return the JSON-ready result.

    ``grid`` defaults to :data:`GRID` (plus :data:`VECTOR_GRID` with an embedder); ``options``
    (default: the shipped defaults) and ``embed_context`` (default:
    ``MemoryOptions().embed_context``) are the starting point and the "defaults" compared with.
    Needs at least two conversations."""
    if store not in ("sqlite", "memory"):
        raise ValidationError(f"store must be 'sqlite' or 'memory', got {store!r}")
    if not isinstance(passes, int) or passes < 1:
        raise ValidationError(f"passes must be a positive integer, got {passes!r}")
    ks = sorted({*(int(k) for k in ks), 5, 10})
    if ks[0] < 1:
        raise ValidationError("k values must be positive integers")
    base = options or RecallOptions()
    raw = load(data)
    chosen = select(conversations, len(raw))
    if len(chosen) < 2:
        raise ValidationError("cross-validation needs at least two conversations")
    model = None
    spec = embedder if isinstance(embedder, str) or embedder is None else repr(embedder)
    if embedder is not None:
        from memvault.embeddings import resolve_embedder
        from memvault.embeddings.cache import CachedEmbedder

        try:
            model = CachedEmbedder(resolve_embedder(embedder_spec(embedder)), max_entries=100_000,
                                   ttl=None)
        except MemvaultError as error:
            raise ValidationError(f"embedder {spec!r}: {error}") from None
    grid = dict(grid if grid is not None else {**GRID, **(VECTOR_GRID if model is not None else {})})
    if embed_context is None:
        embed_context = MemoryOptions().embed_context
    MemoryOptions(embed_context=embed_context)  # a ValidationError for a bad value
    if "embed_context" in grid and model is None:
        raise ValidationError("grid: embed_context needs an embedder")
    for name, values in grid.items():
        if not values:
            raise ValidationError(f"grid: {name} has no values")
        for value in values:
            if name in INDEX_OPTIONS:
                MemoryOptions(**{name: value})
            else:
                dataclasses.replace(base, **{name: value})  # a ValidationError for a bad name or value
    start = {name: embed_context if name == "embed_context" else getattr(base, name) for name in grid}
    contexts = list(dict.fromkeys([embed_context, *grid.get("embed_context", ())]))
    if model is not None and start.get("vector_weight", 0) is None:
        start["vector_weight"] = vector_weight(base, scored=True)  # what None means with an embedder
    for name, default in (("question_penalty", question_penalty), ("entity_boost", entity_boost)):
        if start.get(name, 0) is None:
            start[name] = default(base, scored=model is not None)  # what None means here
    fixed = {f.name: getattr(base, f.name) for f in dataclasses.fields(RecallOptions)
             if f.name not in grid and getattr(base, f.name) != f.default}

    folder = Path(tempfile.mkdtemp(prefix="memvault-bench-locomo-cv-", dir=db_dir))
    opened: dict[tuple[str, int], _Open] = {}
    began = time.perf_counter()
    try:
        for context in contexts:
            for index in chosen:
                conversation = parse_conversation(raw[index])
                if progress:
                    progress(f"ingesting conversation {index} ({conversation.sample_id}), "
                             f"embed_context={context}")
                name = f"{conversation.sample_id}-c{context}.db"
                url = "memory://" if store == "memory" else f"sqlite:///{folder / name}"
                memory = await Memory.open(url, embedder=model,
                                           options=MemoryOptions(embed_context=context))
                opened[(conversation.sample_id, context)] = _Open(
                    conversation, memory, _MemoReader(memory.store, conversation.sample_id))
                await ingest(memory, conversation)
                if model is not None:
                    await memory.flush()
        ingest_s = time.perf_counter() - began
        scorer = _Scorer(opened, ks, fixed, embed_context)
        result = await cross_validate(scorer, grid, start, passes, progress)
    finally:
        for entry in opened.values():
            await entry.memory.close()
        shutil.rmtree(folder, ignore_errors=True)
    return {
        "benchmark": "locomo-cv",
        **result,
        "config": {
            "data": str(data),
            "conversations": scorer.ids,
            "ks": ks,
            "embedder": spec,
            "store": store,
            "grid": {name: list(values) for name, values in grid.items()},
            "start": start,
            "fixed": fixed,
            "passes": passes,
            "objective": "mean recall@10 over the training questions, then mean recall@5",
            "metric": "turn-level evidence recall@k over the k best hits (message_range=0), percent",
            "scorings": len(scorer.answers),
            "ingest_s": round(ingest_s, 2),
            "scoring_s": round(scorer.seconds, 2),
            "seconds": round(time.perf_counter() - began, 2),
        },
    }


async def cross_validate(
    scorer: _Scorer, grid: dict[str, tuple[Any, ...]], start: dict[str, Any], passes: int,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """The folds (each conversation of ``scorer`` held out in turn), their means, the held-out
    questions pooled, the ``start`` values' figures, and the value each constant took most often."""
    ids, ks = scorer.ids, scorer.ks
    folds: list[dict[str, Any]] = []
    for held in ids:
        train = [i for i in ids if i != held]
        picked = await _search(scorer, start, grid, train, passes, progress, f"fold {held}")
        folds.append({
            "held_out": held,
            "chosen": picked,
            "changed": {n: v for n, v in picked.items() if v != start[n]},
            "train": summary(await scorer.pooled(_config(picked), train), ks),
            "held_out_figures": summary(await scorer.score(_config(picked), held), ks),
            "defaults_figures": summary(await scorer.score(_config(start), held), ks),
        })
    pooled_held = [a for fold in folds
                   for a in await scorer.score(_config(fold["chosen"]), fold["held_out"])]

    def fold_mean(key: str, k: int) -> float:
        return round(statistics.fmean(fold[key][f"recall@{k}"] for fold in folds), 2)

    most_often = {}
    for name in grid:
        counts = Counter(repr(fold["chosen"][name]) for fold in folds)
        shown, times = counts.most_common(1)[0]  # a tie: the value the earliest fold chose
        value = next(f["chosen"][name] for f in folds if repr(f["chosen"][name]) == shown)
        most_often[name] = {"value": value, "folds": times, "default": start[name]}
    return {
        "folds": folds,
        "fold_means": {f"recall@{k}": fold_mean("held_out_figures", k) for k in ks},
        "defaults_fold_means": {f"recall@{k}": fold_mean("defaults_figures", k) for k in ks},
        "held_out_pooled": summary(pooled_held, ks),
        "defaults_all": summary(await scorer.pooled(_config(start), ids), ks),
        "most_often": most_often,
    }


def run_cv(data: str | Path, **kwargs: Any) -> dict[str, Any]:
    """:func:`measure_cv` on a new event loop."""
    return asyncio.run(measure_cv(data, **kwargs))


def render_cv(result: dict[str, Any], console: Any) -> None:
    """Print the cross-validation as tables on a rich ``Console``."""
    from rich.table import Table

    config = result["config"]
    console.print(
        f"[bold]memvault bench locomo --cv[/]: {len(config['conversations'])} folds (leave one "
        f"conversation out); embedder: {config['embedder'] or 'none (words only)'}; "
        f"{config['scorings']} scorings in {config['seconds']:.0f} s."
    )
    console.print(f"Each fold picks {', '.join(config['grid'])} on the other conversations "
                  f"({config['objective']}; coordinate-wise, up to {config['passes']} rounds).")
    folds = Table(title="Held-out folds: chosen values vs the defaults (R@5 / R@10, %)")
    for column in ("held out", "questions", "chosen R@5", "chosen R@10", "defaults R@5",
                   "defaults R@10", "chosen (differs from the defaults)"):
        folds.add_column(column, justify="left" if column.startswith(("held", "chosen (")) else "right")
    for fold in result["folds"]:
        held, base = fold["held_out_figures"], fold["defaults_figures"]
        folds.add_row(fold["held_out"], str(held["questions"]), f"{held['recall@5']:.1f}",
                      f"{held['recall@10']:.1f}", f"{base['recall@5']:.1f}", f"{base['recall@10']:.1f}",
                      ", ".join(f"{n}={v}" for n, v in fold["changed"].items()) or "(the defaults)")
    means, base_means = result["fold_means"], result["defaults_fold_means"]
    folds.add_row("[bold]mean of folds[/]", "", f"{means['recall@5']:.1f}", f"{means['recall@10']:.1f}",
                  f"{base_means['recall@5']:.1f}", f"{base_means['recall@10']:.1f}", "")
    console.print(folds)
    categories = Table(title="By category, held-out questions pooled vs the defaults on all")
    for column in ("category", "questions", "held-out R@5", "held-out R@10", "defaults R@5",
                   "defaults R@10"):
        categories.add_column(column, justify="left" if column == "category" else "right")
    pooled, defaults = result["held_out_pooled"], result["defaults_all"]
    for code, row in pooled["by_category"].items():
        other = defaults["by_category"][code]
        categories.add_row(f"{code} {row['name']}", str(row["questions"]), f"{row['recall@5']:.1f}",
                           f"{row['recall@10']:.1f}", f"{other['recall@5']:.1f}", f"{other['recall@10']:.1f}")
    categories.add_row("[bold]all[/]", str(pooled["questions"]), f"{pooled['recall@5']:.1f}",
                       f"{pooled['recall@10']:.1f}", f"{defaults['recall@5']:.1f}",
                       f"{defaults['recall@10']:.1f}")
    console.print(categories)
    console.print("Chosen most often: " + ", ".join(
        f"{name}={entry['value']} ({entry['folds']}/{len(result['folds'])} folds; default {entry['default']})"
        for name, entry in result["most_often"].items()))
