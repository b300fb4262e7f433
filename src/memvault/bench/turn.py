"""``memvault bench turn``: what the turn helper feeds the model, and what assembling it costs.

**Replay** (``replay``): one LoCoMo conversation goes through runtime turns (``Turn``) one by one, as an
agent would live it: one thread per session, the first speaker as the user, the other's turns as
the assistant's output (added whole, with their ``dia_id``), on a fresh SQLite file with the
library's defaults (no embedder unless given). For every user turn it records the tokens the
assembled context holds against the tokens of the whole conversation so far (every message of
the resource, counted the same way: what a "feed everything" agent would send).

Then the questions: after each session, the questions whose evidence turns are all said by then
(and were not asked yet) are asked in the thread of that session; at the end, all of them are
asked again in a new thread (a user coming back later). For each, the context the turn helper
would assemble for it (:func:`memvault.runtime.context.assemble`, the same call a turn makes) is
checked for the evidence turns: in the history window or among the recalled messages. Reported
as evidence recall (the mean share of a question's evidence turns that are fed).

**Assembly** (``assembly``): the time of :func:`memvault.runtime.context.assemble` (system text, working
memory, summary lookup, recall by words, history window, budget) over a store of ``messages``
stored messages, embedder excluded, in two layouts: ``one`` resource holding them all (1,000
threads; the worst case for recall: every message is a candidate) and ``spread`` over resources of
1,000 messages each (10 threads of 100), so that a 1k-message resource's cost can be compared
across store sizes (``--messages 100000`` against ``--messages 1000000``: it should not change).
p50 and p95 over ``queries`` assemblies, each for a random thread with a random query. With
``profile`` (needs pyinstrument, a bench tool), the timed assemblies of the first layout run under
pyinstrument and its call tree (wall time, store calls included) is added to the result.

The text is synthetic, shaped like conversation: words drawn from a vocabulary of 20,000
made-up words with Zipf-distributed frequencies (exponent 1.07, as measured on English), mixed
with 45% common English words (most of them stop words), 40 to 400 characters a message.
``text="dense"`` draws instead from the store benchmark's 250 common words only: every query
word is then in a fifth of all messages, the worst case for full-text search.
"""

from __future__ import annotations

import asyncio
import bisect
import itertools
import random
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from memvault.bench.locomo import Conversation, load, parse_conversation
from memvault.bench.locomo import Turn as Spoken
from memvault.bench.store import _WORDS, _text
from memvault.memory import Memory
from memvault.model import Message, TextPart
from memvault.rules.tokens import message_tokens
from memvault.runtime.context import Context, ContextOptions, assemble
from memvault.runtime.turn import Turn, TurnOptions

Progress = Callable[[str], None]
ASSEMBLY_TARGET_MS = 15.0
"""Context assembly p50 target in one resource of up to 100k messages (issue 14)."""
ASSEMBLY_TARGET_1M_MS = 25.0
"""The target beyond 100k messages (up to 1M) in one resource."""
RESOURCE_MESSAGES = 1_000
"""Messages per resource in the ``spread`` layout."""
LAYOUTS = ("one", "spread")


def _said(turn: Spoken, when: datetime, role: Literal["user", "assistant"] = "assistant") -> Message:
    return Message(role=role, parts=[TextPart(text=turn.text)], created_at=when,
                   metadata={"name": turn.speaker, "dia_id": turn.dia_id})


def _fed_dias(context: Context) -> set[str]:
    fed = [*context.history, *(m for hit in context.recalled for m in hit.context or (hit.message,))]
    return {d for m in fed if isinstance(d := m.metadata.get("dia_id"), str)}


def _recall_share(evidence: Sequence[str], fed: set[str]) -> float:
    return len(set(evidence) & fed) / len(evidence)


async def _replay(conversation: Conversation, folder: Path, options: ContextOptions,
                  embedder: Any, progress: Progress | None) -> dict[str, Any]:
    memory = await Memory.open(f"sqlite:///{folder / 'replay.db'}", embedder=embedder)
    resource = conversation.sample_id
    user_name = conversation.speakers[0]
    turn_options = TurnOptions(context=options, summaries=None, titles=False, debounce=0.05)
    fed_tokens: list[int] = []
    full_tokens: list[int] = []
    total = 0  # tokens of every message stored so far
    said: dict[str, int] = {}  # dia_id -> session number
    asked: set[int] = set()
    during: list[float] = []
    count = memory.options.token_counter
    try:
        for session in conversation.sessions:
            thread = f"session-{session.number}"
            turns = list(session.turns)
            i = 0
            while i < len(turns):
                first = turns[i]
                j = i + 1
                while j < len(turns) and turns[j].speaker != user_name:
                    j += 1
                replies = [_said(t, session.created_at) for t in turns[i + 1 : j]]
                if first.speaker != user_name:  # the other speaker opened the session: no turn
                    opening = [_said(first, session.created_at), *replies]
                    await memory.save_messages(opening, thread_id=thread, resource_id=resource)
                    total += sum(message_tokens(m, count) for m in opening)
                else:
                    user = _said(first, session.created_at, role="user")
                    async with Turn(memory, thread_id=thread, resource_id=resource, user_message=user,
                                    options=turn_options) as turn:
                        assert turn.context is not None
                        total += message_tokens(user, count)
                        fed_tokens.append(turn.context.tokens)
                        full_tokens.append(total)
                        for reply in replies:
                            turn.add(reply)
                            total += message_tokens(reply, count)
                for t in turns[i:j]:
                    said[t.dia_id] = session.number
                i = j
            await memory.flush()
            for number, question in enumerate(conversation.questions):
                if number not in asked and all(e in said for e in question.evidence):
                    asked.add(number)
                    context = await assemble(memory, thread_id=thread, resource_id=resource,
                                             query=question.text, options=options)
                    during.append(_recall_share(question.evidence, _fed_dias(context)))
            if progress:
                progress(f"{resource}: session {session.number} replayed")
        later = []
        await memory.create_thread(thread_id="later", resource_id=resource)
        for question in conversation.questions:
            context = await assemble(memory, thread_id="later", resource_id=resource, query=question.text,
                                     options=options)
            later.append(_recall_share(question.evidence, _fed_dias(context)))
    finally:
        await memory.close()
    ratios = [f / t for f, t in zip(fed_tokens, full_tokens, strict=True)]
    return {
        "conversation": resource,
        "sessions": len(conversation.sessions),
        "user_turns": len(fed_tokens),
        "history_tokens_at_end": total,
        "fed_tokens": {"mean": round(statistics.fmean(fed_tokens), 1), "max": max(fed_tokens),
                       "last": fed_tokens[-1]},
        "fed_over_full": {"at_end": round(fed_tokens[-1] / full_tokens[-1], 4),
                          "median": round(statistics.median(ratios), 4),
                          "overall": round(sum(fed_tokens) / sum(full_tokens), 4)},
        "evidence_fed": {
            "when_answerable_in_current_thread": round(100 * statistics.fmean(during), 1),
            "at_end_in_a_new_thread": round(100 * statistics.fmean(later), 1),
            "questions": len(later),
        },
    }


def replay(data: str | Path, *, conversation: int = 2, max_tokens: int = 16_000, embedder: Any = None,
           progress: Progress | None = None) -> dict[str, Any]:
    """Replay one LoCoMo conversation (index into the file) through the turn helper."""
    parsed = parse_conversation(load(data)[conversation])
    with tempfile.TemporaryDirectory(prefix="memvault-bench-turn-") as folder:
        result = asyncio.run(_replay(parsed, Path(folder), ContextOptions(max_tokens=max_tokens), embedder,
                                     progress))
    return {"benchmark": "turn-replay", "max_tokens": max_tokens,
            "embedder": str(embedder) if embedder else None, **result}


class ZipfText:
    """Conversation-shaped synthetic text (see the module docstring)."""

    def __init__(self, rng: random.Random, words: int = 20_000, exponent: float = 1.07) -> None:
        self.rng = rng
        syllables = [c + v for c in "bcdfghjklmnprstvwz" for v in "aeiou"]
        vocabulary: dict[str, None] = {}
        while len(vocabulary) < words:
            vocabulary["".join(rng.choices(syllables, k=rng.randint(1, 4)))] = None
        self.vocabulary = list(vocabulary)
        self.cumulative = list(itertools.accumulate(1 / (i + 1) ** exponent for i in range(words)))
        self.common = _WORDS[:100]

    def __call__(self, low: int, high: int) -> str:
        out: list[str] = []
        size, length = 0, self.rng.randint(low, high)
        while size < length:
            if self.rng.random() < 0.45:
                word = self.rng.choice(self.common)
            else:
                rank = bisect.bisect(self.cumulative, self.rng.random() * self.cumulative[-1])
                word = self.vocabulary[rank]
            out.append(word)
            size += len(word) + 1
        return " ".join(out).capitalize() + "."


async def _fill(memory: Memory, messages: int, resources: int, threads_per_resource: int,
                text: Callable[[int, int], str]) -> list[tuple[str, str]]:
    per_thread = max(2, messages // (resources * threads_per_resource))
    names = [(f"r{r}", f"t{t}") for r in range(resources) for t in range(threads_per_resource)]
    for resource, thread in names:
        batch = [Message(role="user" if k % 2 == 0 else "assistant",
                         parts=[TextPart(text=text(40, 400))]) for k in range(per_thread)]
        await memory.save_messages(batch, thread_id=thread, resource_id=resource)
    return names


def _target(messages: int) -> float:
    return ASSEMBLY_TARGET_MS if messages <= 100_000 else ASSEMBLY_TARGET_1M_MS


async def _assembly(messages: int, layout: str, queries: int, folder: Path, seed: int, text_kind: str,
                    profile: bool, progress: Progress | None) -> dict[str, Any]:
    rng = random.Random(seed)
    text: Callable[[int, int], str] = (
        ZipfText(rng) if text_kind == "zipf" else (lambda low, high: _text(rng, low, high)))
    if layout == "one":
        resources, threads = 1, 1000
    else:
        resources, threads = max(1, messages // RESOURCE_MESSAGES), 10
    memory = await Memory.open(f"sqlite:///{folder / f'assembly-{layout}.db'}")
    try:
        started = time.perf_counter()
        names = await _fill(memory, messages, resources, threads, text)
        filled = time.perf_counter() - started
        if progress:
            progress(f"{messages} messages stored in {resources} resource(s); assembling")
        await memory.update_working_memory("- Name: Ada\n- Likes: green tea", resource_id=names[0][0])
        timings = []
        fed = []
        profiler: Any = None
        if profile:
            from pyinstrument import Profiler  # the bench extra

            profiler = Profiler(async_mode="enabled")
            profiler.start()
        for _ in range(queries):
            resource, thread = rng.choice(names)
            query = text(30, 120)
            began = time.perf_counter()
            context = await assemble(memory, thread_id=thread, resource_id=resource, query=query)
            timings.append(1000.0 * (time.perf_counter() - began))
            fed.append(context.tokens)
        timings.sort()
        result: dict[str, Any] = {
            "layout": layout, "resources": resources, "messages": messages,
            "resource_messages": messages // resources, "fill_s": round(filled, 1),
            "p50_ms": round(statistics.median(timings), 2),
            "p95_ms": round(timings[int(0.95 * (len(timings) - 1))], 2),
            "mean_fed_tokens": round(statistics.fmean(fed), 1)}
        if profiler is not None:
            profiler.stop()
            tree = profiler.output_text(unicode=False, color=False, show_all=False, short_mode=False)
            result["profile"] = [line for line in str(tree).splitlines() if line.strip()]
        return result
    finally:
        await memory.close()


def assembly(*, messages: int = 100_000, queries: int = 200, seed: int = 1, text: str = "zipf",
             layouts: Sequence[str] = LAYOUTS, profile: bool = False,
             progress: Progress | None = None) -> dict[str, Any]:
    """Context-assembly time at ``messages`` stored messages in the ``layouts`` (``"one"``
    resource, ``"spread"`` over resources of 1,000 messages); ``text`` is ``"zipf"``
    (conversation-shaped) or ``"dense"`` (see the module docstring); ``profile``: add
    pyinstrument's call tree of the first layout's assemblies."""
    if text not in ("zipf", "dense"):
        raise ValueError(f"text must be 'zipf' or 'dense', got {text!r}")
    if not layouts or any(layout not in LAYOUTS for layout in layouts):
        raise ValueError(f"layouts must be among {LAYOUTS}, got {tuple(layouts)!r}")
    with tempfile.TemporaryDirectory(prefix="memvault-bench-assembly-") as folder:
        results = [asyncio.run(_assembly(messages, layout, queries, Path(folder), seed, text,
                                         profile and i == 0, progress))
                   for i, layout in enumerate(layouts)]
    target = _target(messages)
    return {"benchmark": "context-assembly", "text": text, "queries": queries, "layouts": results,
            "target_p50_ms": target,
            "target_met": {r["layout"]: r["p50_ms"] <= target for r in results if r["layout"] == "one"}}
