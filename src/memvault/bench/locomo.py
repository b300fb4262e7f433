"""``memvault bench locomo``: does recall find the turns a question needs? (LoCoMo)

LoCoMo (Maharana et al., ACL 2024; CC BY-NC 4.0, so the data set is never shipped: the
benchmark takes a path to its JSON) holds long two-person conversations in dated sessions, and
questions whose ``evidence`` names the turns (``dia_id`` such as ``"D3:7"``) that answer them.

What is measured, through the public API only:

- **Ingestion.** Each conversation goes into a fresh store (``Memory.open("sqlite:///<tmp>")``
  by default, ``memory://`` with ``store="memory"``, and with ``store`` a PostgreSQL URL a
  schema ``bench_locomo_<random>`` of that database, dropped afterwards): one resource per
  conversation (its ``sample_id``), one thread per session (``session-N``, titled with the
  session's date), one message per turn. A turn's text is the speaker's words, with a shared image's
  ``blip_caption`` appended as ``[image: ...]``; the first speaker's turns are ``user``
  messages, the second's ``assistant``. The speaker's name is kept as ``metadata["name"]``
  (where memvault's OpenAI-chat converter keeps a participant's name, and what recall's author
  boost reads), the turn id as ``metadata["dia_id"]``, and the session date ("1:56 pm on 8 May,
  2023") as ``created_at``.
- **Questions.** Each question is the query of one :func:`memvault.recall.recall` call over the
  whole resource (``scope="resource"``), with no current thread and so no recent window, with
  the library's default :class:`~memvault.recall.RecallOptions` unless told otherwise.
- **Metric.** Turn-level evidence recall@k: for each question with at least one valid evidence
  id, the share of its evidence turns among the k best hits (``message_range=0``: neighbours
  do not count), averaged over questions, in percent. Malformed or unknown evidence ids are
  skipped; a question left with none is not counted (both are reported). Figures overall, per
  category code (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial) and per
  conversation.
- **Cost.** Another call per question with the defaults as a user gets them (``top_k=5``,
  ``message_range=1``) is timed (wall clock, ms per query). It runs before the ranking call, so
  that with an embedder its time includes embedding the question (the ranking call reuses the
  vector), and its recalled messages are counted
  in tokens (:func:`memvault.rules.tokens.estimate_tokens` of their text); ``fed_recall@5`` is the
  evidence recall over all those fed messages (hits and neighbours).
- **Vectors** (``embedder=SPEC``): the store is opened as users open it,
  ``Memory.open(url, embedder=SPEC)`` (any :func:`memvault.embeddings.resolve_embedder` spec,
  e.g. ``"sentence-transformers/all-MiniLM-L6-v2"``; or ``"hash"``, a meaningless toy for
  tests), every turn is embedded after its commit (``memory.flush()`` waits for it), and the
  questions go through ``Memory.recall``, which fuses the vector search in.

:func:`run` returns a JSON-ready dict; the targets (lexical-only default: recall@5 >= 65,
recall@10 >= 75) are checked against the measurements.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import math
import os
import platform
import re
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memvault import Memory, MemoryOptions, Message
from memvault.bench.schemas import drop_schema, fresh_name, is_postgres, with_schema
from memvault.errors import MemvaultError, ValidationError
from memvault.recall import RecallOptions
from memvault.rules.tokens import estimate_tokens
from memvault.rules.words import tokens as lexical_tokens

TARGETS: dict[str, float] = {"recall@5": 65.0, "recall@10": 75.0}
"""Lower bounds for the lexical-only default (no embedder), in percent."""

CATEGORIES: dict[int, str] = {
    1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial",
}
DEFAULT_KS: tuple[int, ...] = (5, 10, 25)
ROLES = ("user", "assistant")

_SESSION = re.compile(r"session_(\d+)")
_DIA_ID = re.compile(r"D(\d+):(\d+)")
_MONTHS = {name: i for i, name in enumerate(
    "january february march april may june july august september october november december".split(),
    start=1)}
_DATE = re.compile(
    r"(\d{1,2}):(\d{2})\s*([ap]\.?m\.?)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})", re.I
)


# the data set


@dataclass(frozen=True)
class Turn:
    dia_id: str
    speaker: str
    text: str


@dataclass(frozen=True)
class Session:
    number: int
    date_text: str
    created_at: datetime
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class Question:
    text: str
    category: int
    evidence: tuple[str, ...]
    """The valid evidence ids (existing turns), each once."""


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    speakers: tuple[str, str]
    sessions: tuple[Session, ...]
    questions: tuple[Question, ...]
    skipped_evidence_ids: int = 0
    questions_without_evidence: int = 0

    @property
    def turns(self) -> int:
        return sum(len(s.turns) for s in self.sessions)


def parse_session_date(text: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` → 2023-05-08 13:56 UTC."""
    match = _DATE.search(text)
    if not match:
        raise ValueError(f"not a LoCoMo session date: {text!r}")
    hour, minute = int(match[1]) % 12, int(match[2])
    if match[3].lower().startswith("p"):
        hour += 12
    month = _MONTHS.get(match[5].lower())
    if month is None:
        raise ValueError(f"unknown month in session date: {text!r}")
    return datetime(int(match[6]), month, int(match[4]), hour, minute, tzinfo=UTC)


def turn_text(turn: dict[str, Any]) -> str:
    """The speaker's words, with a shared image's caption appended as ``[image: ...]``."""
    text = str(turn.get("text") or "").strip()
    caption = turn.get("blip_caption")
    if isinstance(caption, str) and caption.strip():
        text = f"{text} [image: {caption.strip()}]" if text else f"[image: {caption.strip()}]"
    return text


def parse_conversation(raw: dict[str, Any]) -> Conversation:
    """One LoCoMo sample in the original schema."""
    body = raw["conversation"]
    numbers = sorted(int(m[1]) for key in body if (m := _SESSION.fullmatch(key)))
    sessions = []
    for number in numbers:
        date_text = str(body.get(f"session_{number}_date_time", ""))
        turns = tuple(
            Turn(dia_id=str(t["dia_id"]), speaker=str(t["speaker"]), text=turn_text(t))
            for t in body[f"session_{number}"]
        )
        sessions.append(Session(number, date_text, parse_session_date(date_text), turns))
    known = {t.dia_id for s in sessions for t in s.turns}
    questions, skipped, without = [], 0, 0
    for qa in raw.get("qa", []):
        evidence = [e for e in qa.get("evidence") or [] if isinstance(e, str)]
        valid = tuple(dict.fromkeys(e for e in evidence if _DIA_ID.fullmatch(e) and e in known))
        skipped += len(qa.get("evidence") or []) - sum(1 for e in evidence if e in valid)
        if not valid:
            without += 1
            continue
        questions.append(Question(str(qa["question"]), int(qa["category"]), valid))
    return Conversation(
        sample_id=str(raw["sample_id"]),
        speakers=(str(body.get("speaker_a", "")), str(body.get("speaker_b", ""))),
        sessions=tuple(sessions),
        questions=tuple(questions),
        skipped_evidence_ids=skipped,
        questions_without_evidence=without,
    )


def load(path: str | Path) -> list[dict[str, Any]]:
    """The raw samples of a LoCoMo JSON file (a list of conversations)."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, list) or not all(isinstance(c, dict) and "conversation" in c for c in data):
        raise ValidationError(f"{path}: not a LoCoMo file (a JSON list of conversations)")
    return data


def select(spec: str | None, count: int) -> list[int]:
    """Conversation indices from ``"0-4"``, ``"0,2,4"``, ``"3"`` (``None``: all)."""
    if spec is None or spec.strip() in ("", "all"):
        return list(range(count))
    chosen: list[int] = []
    for piece in spec.split(","):
        piece = piece.strip()
        bounds = piece.split("-", 1)
        try:
            low, high = int(bounds[0]), int(bounds[-1])
        except ValueError:
            raise ValidationError(f"conversations: {piece!r} is not an index or a range like 0-4") from None
        if low > high or low < 0 or high >= count:
            raise ValidationError(f"conversations: {piece!r} is outside 0-{count - 1}")
        chosen.extend(range(low, high + 1))
    return list(dict.fromkeys(chosen))


async def ingest(memory: Memory, conversation: Conversation) -> None:
    """One resource, one thread per session, one message per turn (see the module doc)."""
    roles = dict(zip(conversation.speakers, ROLES, strict=True))
    for session in conversation.sessions:
        thread_id = f"session-{session.number}"
        await memory.create_thread(resource_id=conversation.sample_id, thread_id=thread_id,
                                   title=f"Session {session.number}: {session.date_text}",
                                   metadata={"date": session.date_text}, exist_ok=True)
        messages = [
            Message.parse({
                "id": turn.dia_id.replace(":", "-"),
                "role": roles.get(turn.speaker, "user"),
                "parts": [{"type": "text", "text": turn.text}],
                "created_at": session.created_at,
                "metadata": {"name": turn.speaker, "dia_id": turn.dia_id},
            })
            for turn in session.turns
        ]
        await memory.save_messages(messages, thread_id=thread_id, resource_id=conversation.sample_id)


# a toy embedder, for tests


def hash_vectors(texts: list[str], dimensions: int = 256) -> list[list[float]]:
    """Hashed stemmed words (the hashing trick): a deterministic embedding with no meaning and
    no download, so that tests can exercise the vector path."""
    out = []
    for text in texts:
        vector = [0.0] * dimensions
        for word in lexical_tokens(text):
            digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
            vector[int.from_bytes(digest[:4], "little") % dimensions] += 1.0 if digest[4] & 1 else -1.0
        vector[0] += 1e-3  # never all zeros
        out.append(vector)
    return out


def embedder_spec(spec: Any) -> Any:
    """``"hash"`` / ``"hash:N"`` → the toy :func:`hash_vectors` (as a function embedder spec); a
    JSON object (``'{"model": "sentence-transformers/all-MiniLM-L6-v2", "batch_size": 8}'``) →
    that dict spec, for an embedder's options; anything else is passed to
    ``Memory.open(embedder=...)`` unchanged."""
    if isinstance(spec, str) and spec.strip().startswith("{"):
        try:
            return json.loads(spec)  # an object: the text starts with "{"
        except ValueError as error:
            raise ValidationError(f"embedder {spec!r} is not valid JSON: {error}") from None
    if isinstance(spec, str) and (spec.strip().lower() == "hash" or spec.strip().lower().startswith("hash:")):
        text = spec.strip().lower()
        try:
            dimensions = int(text.split(":", 1)[1]) if ":" in text else 256
        except ValueError:
            raise ValidationError(f"embedder {spec!r}: write hash or hash:<dimensions>") from None
        from memvault.embeddings.function import FunctionEmbedder

        return FunctionEmbedder(lambda texts: hash_vectors(texts, dimensions), model=f"toy/{text}",
                                dimensions=dimensions, run_in_thread=False)
    return spec


# measuring


@dataclass
class _Scores:
    recall: dict[int, list[float]] = field(default_factory=dict)
    fed_recall: list[float] = field(default_factory=list)
    hit_tokens: list[int] = field(default_factory=list)
    fed_tokens: list[int] = field(default_factory=list)
    fed_messages: list[int] = field(default_factory=list)
    ms: list[float] = field(default_factory=list)

    def add(self, other: _Scores) -> None:
        for k, values in other.recall.items():
            self.recall.setdefault(k, []).extend(values)
        self.fed_recall += other.fed_recall
        self.hit_tokens += other.hit_tokens
        self.fed_tokens += other.fed_tokens
        self.fed_messages += other.fed_messages
        self.ms += other.ms

    def summary(self, ks: Sequence[int]) -> dict[str, Any]:
        out: dict[str, Any] = {"questions": len(self.fed_recall)}
        for k in ks:
            out[f"recall@{k}"] = _percent(self.recall.get(k, []))
        out["fed_recall@5"] = _percent(self.fed_recall)
        return out


def _percent(values: Sequence[float]) -> float:
    return round(100.0 * statistics.fmean(values), 2) if values else 0.0


def _dia(message: Message) -> str | None:
    value = message.metadata.get("dia_id")
    return value if isinstance(value, str) else None


async def _measure_conversation(
    conversation: Conversation,
    *,
    ks: Sequence[int],
    options: RecallOptions,
    embedder: Any,
    store: str,
    folder: Path,
    by_category: dict[int, _Scores],
    embed_context: int | None = None,
) -> tuple[_Scores, dict[str, float]]:
    schema = fresh_name("bench_locomo") if is_postgres(store) else None
    if schema is not None:
        url = with_schema(store, schema)
    else:
        url = "memory://" if store == "memory" else f"sqlite:///{folder / (conversation.sample_id + '.db')}"
    timings: dict[str, float] = {}
    started = time.perf_counter()
    memory_options = None if embed_context is None else MemoryOptions(embed_context=embed_context)
    memory = await Memory.open(url, embedder=embedder, options=memory_options)
    try:
        await ingest(memory, conversation)
        timings["ingest_s"] = time.perf_counter() - started
        if embedder is not None:
            started = time.perf_counter()
            await memory.flush()
            timings["embed_s"] = time.perf_counter() - started
        ranking = dataclasses.replace(options, top_k=max(ks), message_range=0, last_n=0,
                                      working_memory=False)
        fed = dataclasses.replace(options, top_k=5, last_n=0, working_memory=False)
        scores = _Scores()
        warnings = 0
        for question in conversation.questions:
            evidence = set(question.evidence)
            one = _Scores()
            # the timed call comes first: it embeds the query (the ranking call then reuses the
            # vector from the semantic index's cache of recent queries)
            began = time.perf_counter()
            fed_result = await memory.recall(resource_id=conversation.sample_id, query=question.text,
                                             options=fed)
            one.ms.append(1000.0 * (time.perf_counter() - began))
            ranked = await memory.recall(resource_id=conversation.sample_id, query=question.text,
                                         options=ranking)
            found = [_dia(h.message) for h in ranked.hits]
            for k in ks:
                one.recall[k] = [len(evidence & set(found[:k])) / len(evidence)]
            warnings += len(fed_result.warnings)
            fed_ids = {_dia(m) for m in fed_result.messages}
            one.fed_recall.append(len(evidence & fed_ids) / len(evidence))
            one.hit_tokens.append(sum(estimate_tokens(h.message.text) for h in fed_result.hits))
            one.fed_tokens.append(sum(estimate_tokens(m.text) for m in fed_result.messages))
            one.fed_messages.append(len(fed_result.messages))
            scores.add(one)
            by_category.setdefault(question.category, _Scores()).add(one)
        timings["recall_warnings"] = warnings
    finally:
        await memory.close()
        if schema is not None:
            await drop_schema(store, schema)
    return scores, timings


def _costs(scores: _Scores) -> dict[str, Any]:
    ms = sorted(scores.ms)
    return {
        "tokens": {
            "mean_hits": round(statistics.fmean(scores.hit_tokens), 1) if ms else 0.0,
            "mean_fed": round(statistics.fmean(scores.fed_tokens), 1) if ms else 0.0,
            "mean_fed_messages": round(statistics.fmean(scores.fed_messages), 2) if ms else 0.0,
        },
        "ms_per_query": {
            "mean": round(statistics.fmean(ms), 2) if ms else 0.0,
            "p50": round(ms[len(ms) // 2], 2) if ms else 0.0,
            "p95": round(ms[min(len(ms) - 1, math.ceil(0.95 * len(ms)) - 1)], 2) if ms else 0.0,
        },
    }


async def measure(
    data: str | Path,
    *,
    conversations: str | None = None,
    ks: Sequence[int] = DEFAULT_KS,
    embedder: Any = None,
    options: RecallOptions | None = None,
    store: str = "sqlite",
    db_dir: str | Path | None = None,
    progress: Callable[[str], None] | None = None,
    embed_context: int | None = None,
) -> dict[str, Any]:
    """Run the benchmark (see the module doc) and return the JSON-ready result.
    ``embed_context`` (default: ``MemoryOptions``' default) is the stores'
    :attr:`memvault.MemoryOptions.embed_context`."""
    if embed_context is not None:
        MemoryOptions(embed_context=embed_context)  # a ValidationError for a bad value
    if store not in ("sqlite", "memory") and not is_postgres(store):
        raise ValidationError(f"store must be 'sqlite', 'memory' or a PostgreSQL URL, got {store!r}")
    ks = sorted({int(k) for k in ks})
    if not ks or ks[0] < 1:
        raise ValidationError("k values must be positive integers")
    ks_reported = sorted({*ks, 5, 10})
    options = options or RecallOptions()
    raw = load(data)
    chosen = select(conversations, len(raw))
    spec = embedder if isinstance(embedder, str) or embedder is None else repr(embedder)
    model = None
    if embedder is not None:
        from memvault.embeddings import resolve_embedder

        try:  # once, not per conversation: a local model loads in seconds
            model = resolve_embedder(embedder_spec(embedder))
        except MemvaultError as error:
            raise ValidationError(f"embedder {spec!r}: {error}") from None
    folder = Path(tempfile.mkdtemp(prefix="memvault-bench-locomo-", dir=db_dir))
    overall, by_category = _Scores(), dict[int, _Scores]()
    per_conversation: dict[str, Any] = {}
    totals = {"turns": 0, "questions_without_evidence": 0, "skipped_evidence_ids": 0}
    started = time.perf_counter()
    try:
        for index in chosen:
            conversation = parse_conversation(raw[index])
            if progress:
                progress(f"conversation {index} ({conversation.sample_id}): "
                         f"{conversation.turns} turns, {len(conversation.questions)} questions")
            scores, timings = await _measure_conversation(
                conversation, ks=ks_reported, options=options, embedder=model, store=store,
                folder=folder, by_category=by_category, embed_context=embed_context)
            overall.add(scores)
            totals["turns"] += conversation.turns
            totals["questions_without_evidence"] += conversation.questions_without_evidence
            totals["skipped_evidence_ids"] += conversation.skipped_evidence_ids
            per_conversation[conversation.sample_id] = {
                "index": index, "turns": conversation.turns, "sessions": len(conversation.sessions),
                **scores.summary(ks_reported), **_costs(scores),
                **{name: round(value, 3) for name, value in timings.items()},
            }
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    result: dict[str, Any] = {
        "benchmark": "locomo",
        **overall.summary(ks_reported),
        **_costs(overall),
        "by_category": {
            str(code): {"name": CATEGORIES.get(code, "unknown"), **by_category[code].summary(ks_reported)}
            for code in sorted(by_category)
        },
        "by_conversation": per_conversation,
        "config": {
            "data": str(data),
            "conversations": [parse_conversation(raw[i]).sample_id for i in chosen],
            "ks": ks_reported,
            "embedder": spec,
            "store": store if not is_postgres(store) else "postgresql",
            "options": {k: v for k, v in dataclasses.asdict(options).items()},
            "embed_context": (MemoryOptions().embed_context if embed_context is None
                              else embed_context),
            "query": "the question, scope='resource', no current thread, no recent window",
            "metric": "turn-level evidence recall@k over the k best hits (message_range=0), "
                      "percent, averaged over questions with valid evidence",
            "cost_call": "top_k=5, message_range=1 (the defaults): wall ms per call, the query's "
                         "embedding included; estimate_tokens of the fed messages' text",
            **totals,
            "seconds": round(time.perf_counter() - started, 2),
            "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                        "python": sys.version.split()[0], "sqlite": sqlite3.sqlite_version},
        },
    }
    lexical_only = model is None
    result["targets"] = {name: f">= {bound:g}" for name, bound in TARGETS.items()}
    result["targets_met"] = {name: result[name] >= bound for name, bound in TARGETS.items()}
    result["targets_apply"] = lexical_only
    return result


def run(
    data: str | Path,
    *,
    conversations: str | None = None,
    ks: Iterable[int] = DEFAULT_KS,
    embedder: Any = None,
    options: RecallOptions | None = None,
    store: str = "sqlite",
    db_dir: str | Path | None = None,
    progress: Callable[[str], None] | None = None,
    embed_context: int | None = None,
) -> dict[str, Any]:
    """:func:`measure` on a new event loop."""
    return asyncio.run(measure(data, conversations=conversations, ks=list(ks), embedder=embedder,
                               options=options, store=store, db_dir=db_dir, progress=progress,
                               embed_context=embed_context))


def parse_option(text: str) -> tuple[str, Any]:
    """``"name=value"`` for a :class:`RecallOptions` field, the value parsed as JSON when it
    can be (``top_k=10``, ``fusion=rrf``, ``min_vector_score=null``)."""
    name, sep, value = text.partition("=")
    names = {f.name for f in dataclasses.fields(RecallOptions)}
    if not sep or name.strip() not in names:
        raise ValidationError(f"{text!r}: expected NAME=VALUE with NAME one of {', '.join(sorted(names))}")
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError:
        parsed = value
    return name.strip(), parsed


def render(result: dict[str, Any], console: Any) -> None:
    """Print the result as tables on a rich ``Console``."""
    from rich.table import Table

    config = result["config"]
    ks = [k for k in config["ks"]]
    console.print(
        f"[bold]memvault bench locomo[/]: {len(config['conversations'])} conversations, "
        f"{config['turns']:,} turns, {result['questions']:,} questions with evidence "
        f"({config['questions_without_evidence']} without, {config['skipped_evidence_ids']} evidence "
        f"ids skipped); embedder: {config['embedder'] or 'none (words only)'}; store: {config['store']}"
    )
    console.print(f"Metric: {config['metric']}.")

    def table(title: str, rows: list[tuple[str, dict[str, Any]]]) -> Table:
        out = Table(title=title)
        out.add_column("", justify="left")
        out.add_column("questions", justify="right")
        for k in ks:
            out.add_column(f"R@{k}", justify="right")
        out.add_column("fed R@5", justify="right")
        for name, row in rows:
            out.add_row(name, f"{row['questions']:,}", *(f"{row[f'recall@{k}']:.1f}" for k in ks),
                        f"{row['fed_recall@5']:.1f}")
        return out

    console.print(table("Evidence recall (%)", [
        ("overall", result),
        *((f"{code} {row['name']}", row) for code, row in result["by_category"].items()),
    ]))
    console.print(table("Per conversation", list(result["by_conversation"].items())))
    tokens, ms = result["tokens"], result["ms_per_query"]
    console.print(
        f"Defaults (top_k=5, message_range=1): {tokens['mean_fed']:.0f} tokens fed per query "
        f"({tokens['mean_fed_messages']:.1f} messages; the 5 hits alone {tokens['mean_hits']:.0f}); "
        f"{ms['mean']:.1f} ms per query (p50 {ms['p50']:.1f}, p95 {ms['p95']:.1f})."
    )
    if result["targets_apply"]:
        for name, target in result["targets"].items():
            mark = "[green]yes[/]" if result["targets_met"][name] else "[red]no[/]"
            console.print(f"{mark} {name} {result[name]:.1f} (target {target})")
    else:
        console.print("The targets are set for words only (no embedder); not checked here.")
