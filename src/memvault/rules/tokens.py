"""Token counting. A counter is any function from text to a token count.

:func:`estimate_tokens`, the default, needs no package and no download: it splits text the way
OpenAI's o200k_base tokenizer pre-splits it and gives each piece (a word, a CJK character, a run
of symbols) a cost measured against o200k_base, so it tracks Chinese, code and English alike,
where characters / 4 undercounts Chinese about three times. :func:`resolve_token_counter` turns
a spec (``"estimate"``, ``"o200k_base"``, ``"gpt-4o"``, a function) into a counter; the exact
ones count with tiktoken, offline, and need the ``tokens`` extra. A message costs its parts'
tokens plus a small per-message overhead, as chat APIs do (:func:`message_tokens`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import TypeAlias

from memvault.errors import ConfigurationError, shown
from memvault.model import Message, ReasoningPart, TextPart, ToolCallPart, ToolResultPart

__all__ = [
    "MESSAGE_OVERHEAD",
    "TokenCounter",
    "TokenCounterSpec",
    "estimate_tokens",
    "message_tokens",
    "resolve_token_counter",
]

TokenCounter = Callable[[str], int]
MESSAGE_OVERHEAD = 4

TokenCounterSpec: TypeAlias = str | TokenCounter | None
"""What :func:`resolve_token_counter` accepts: None, ``"estimate"``, an encoding, a model, a function."""

# The estimate's pieces, tried in this order at each position. Like o200k_base's pre-split, a
# word swallows one symbol right before it ("(self", "_name", ".append") and a case change
# starts a new word ("TokenBucket" is "Token" + "Bucket").
_SYMBOL = r"[^\s\w\u3000-\u303f\uff00-\uffef]|_"
_UPPER = r"[A-Z\u00c0-\u00d6\u00d8-\u00de]"  # Latin-1 capitals, without the multiplication sign
_LOWER = r"[a-z\u00df-\u00f6\u00f8-\u024f]"  # small letters and Latin Extended-A/B, without the division sign
_PIECES = re.compile(
    r"(?P<han>[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff])"  # one Chinese character (kanji, hanja)
    r"|(?P<kana_hangul>[\u3040-\u30ff\uac00-\ud7af])"  # one Japanese kana or Korean syllable
    r"|(?P<cjk_punct>[\u3001-\u303f\uff00-\uffef])"  # CJK and full-width punctuation
    rf"|(?P<latin>(?:{_SYMBOL})?(?:{_UPPER}*{_LOWER}+|{_UPPER}+))"  # a Latin word, maybe accented
    rf"|(?P<letters>(?:{_SYMBOL})?[^\W\d_]+)"  # a word in another script (Cyrillic, Greek, ...)
    r"|(?P<digits>\d{1,3})"
    rf"|(?P<symbols>(?:{_SYMBOL})+)"
)
# Costs in twentieths of a token, measured against o200k_base (see tests/test_tokens.py).
_UNIT = 20
_HAN = 19  # 0.95: common Chinese words merge (~0.86 a character), traditional less (~1.05)
_KANA = 12  # 0.6: kana and hangul merge into longer tokens than Chinese characters
_CJK_PUNCT = 10  # 0.5: often merged with the character after it
_LEADING_SYMBOL = 10  # 0.5: the symbol a word swallows
_EXTRA_SYMBOL = 10  # 0.5 for each symbol after the first of a run: "):", "->", '"""' merge
_ASCII_WORD_LETTERS = 8  # an English word: one token per 8 letters, started
_ACCENTED_WORD_LETTERS = 3  # a word with accents (French, German, ...): one per 3, started
_OTHER_WORD_LETTERS = 4  # a word in another script: one per 4 letters, started


def _piece_cost(kind: str | None, piece: str) -> int:
    if kind == "han":
        return _HAN
    if kind == "kana_hangul":
        return _KANA
    if kind == "cjk_punct":
        return _CJK_PUNCT
    if kind == "digits":
        return _UNIT
    if kind == "symbols":
        return _UNIT + (len(piece) - 1) * _EXTRA_SYMBOL
    cost = 0
    if piece[0] == "_" or not piece[0].isalnum():  # the symbol a word swallowed
        cost, piece = _LEADING_SYMBOL, piece[1:]
    if kind == "latin":
        per = _ASCII_WORD_LETTERS if piece.isascii() else _ACCENTED_WORD_LETTERS
    else:
        per = _OTHER_WORD_LETTERS
    return cost + _UNIT * (1 + (len(piece) - 1) // per)


_PLAIN = re.compile(r"([!-/:-@\[-`{-~]?)(?:[A-Z]?[a-z]+|[A-Z]+)([!-/:-@\[-`{-~]*)")
"""A chunk that is one plain ASCII word with at most one symbol before it (which the word
swallows) and a run of symbols after it: its pieces are known without :data:`_PIECES`."""


def estimate_tokens(text: str) -> int:
    """An offline estimate of the o200k_base (GPT-4o) token count of ``text``.

    The text is split into pieces the way o200k_base pre-splits it, and each piece costs what
    it costs on average there: an English word one token per 8 letters (started), an accented
    or non-Latin word more, up to 3 digits one, a run of symbols 1 + 0.5 per extra symbol, a
    symbol right before a word 0.5, a Chinese character 0.95, a kana or hangul syllable 0.6, CJK
    punctuation 0.5. Costs are added up per whitespace-separated chunk and rounded up, so
    whitespace costs nothing, any other character costs something, the estimate never exceeds
    ``len(text)`` and it adds up over text joined with spaces. Measured within ±10% of
    o200k_base on English prose, Python code and Chinese prose (tests/data/tokens: +5%, -1%
    and +6%); not exact: use :func:`resolve_token_counter` with
    ``"o200k_base"`` for exact counts.

    A chunk that is one plain ASCII word (``"weather"``, ``"Paris"``, ``"NASA"``) with at most
    one symbol before it and a run of symbols after it (``"(tea),"``) is costed without the
    pieces' pattern; any other chunk is split into pieces (the same figures: tests/test_tokens.py
    checks the two against each other).
    """
    total = 0
    for chunk in text.split():  # the pieces of :data:`_PIECES` never hold whitespace
        plain = _PLAIN.fullmatch(chunk) if chunk.isascii() else None
        if plain is None:
            total += _pieces_tokens(chunk)
            continue
        lead, tail = plain.group(1), plain.group(2)
        letters = len(chunk) - len(lead) - len(tail)
        cost = (_LEADING_SYMBOL if lead else 0) + _UNIT * (1 + (letters - 1) // _ASCII_WORD_LETTERS)
        if tail:
            cost += _UNIT + (len(tail) - 1) * _EXTRA_SYMBOL
        total += -(-cost // _UNIT)
    return total


def _pieces_tokens(text: str) -> int:
    """:func:`estimate_tokens` of ``text`` piece by piece (:data:`_PIECES`), for any text."""
    total = 0
    chunk = 0  # in twentieths of a token
    end = -1
    for match in _PIECES.finditer(text):
        if match.start() != end:  # whitespace since the last piece ends a chunk
            total += -(-chunk // _UNIT)
            chunk = 0
        chunk += _piece_cost(match.lastgroup, match.group())
        end = match.end()
    return total - (-chunk // _UNIT)


def resolve_token_counter(spec: TokenCounterSpec = None) -> TokenCounter:
    """The token counter that ``spec`` names.

    - ``None`` (the default) or ``"estimate"``: :func:`estimate_tokens`.
    - an encoding, ``"o200k_base"`` or ``"cl100k_base"`` (also ``"tiktoken:o200k_base"``; and
      ``"o200k_harmony"``, which counts text as o200k_base does): an exact counter, built once
      per encoding and shared (see :mod:`memvault.rules.tiktoken_counts`).
    - a model name such as ``"gpt-4o"``, ``"gpt-4.1-mini"`` or ``"gpt-4"``: the exact counter
      of that model's encoding, as tiktoken maps it.
    - any function from ``str`` to ``int``: returned as it is.

    Strings are matched case-insensitively. Exact counting never downloads anything: it needs
    the ``tokens`` extra (``pip install 'memvault[tokens]'``) and raises
    :class:`memvault.errors.MissingExtraError` naming it when a package is missing. Raises
    :class:`memvault.errors.ConfigurationError` for an unknown name, a model whose encoding
    cannot be counted offline, or a spec of another type.

    Example::

        MemoryOptions(token_counter=resolve_token_counter("gpt-4o"))
    """
    if spec is None:
        return estimate_tokens
    if isinstance(spec, str):
        return _from_string(spec)
    if callable(spec):
        return spec
    raise ConfigurationError(
        "a token counter spec must be None, 'estimate', an encoding such as 'o200k_base', a model "
        f"such as 'gpt-4o', or a function from str to int; got {type(spec).__name__} {shown(spec)}"
    )


def _from_string(spec: str) -> TokenCounter:
    name = spec.strip().lower()
    if name == "estimate":
        return estimate_tokens
    # Imported here: it is small, but the encodings it loads are not, and most callers estimate.
    from memvault.rules import tiktoken_counts

    supported = ", ".join(tiktoken_counts.ENCODINGS)
    if name.startswith("tiktoken:"):
        encoding = name.removeprefix("tiktoken:").strip()
        if encoding not in tiktoken_counts.ENCODINGS:
            raise ConfigurationError(
                f"unknown tiktoken encoding in token counter {shown(spec)}: expected one of {supported}"
            )
        return tiktoken_counts.tiktoken_counter(encoding)
    if name in tiktoken_counts.ENCODINGS:
        return tiktoken_counts.tiktoken_counter(name)
    model_encoding = tiktoken_counts.encoding_for_model(name) if name else None
    if model_encoding is None:
        raise ConfigurationError(
            f"unknown token counter {shown(spec)}: expected 'estimate', an encoding ({supported}), "
            "'tiktoken:<encoding>', an OpenAI model name such as 'gpt-4o', or a function from str to int"
        )
    if model_encoding not in tiktoken_counts.ENCODINGS:
        raise ConfigurationError(
            f"the model {shown(spec)} uses the {model_encoding} encoding, which memvault cannot count "
            "offline; "
            f"exact counts are available for {supported}, or use 'estimate'"
        )
    return tiktoken_counts.tiktoken_counter(model_encoding)


def message_tokens(message: Message, count: TokenCounter = estimate_tokens) -> int:
    """Tokens a message costs in a prompt: its text, reasoning and tool parts plus overhead."""
    total = MESSAGE_OVERHEAD
    for part in message.parts:
        if isinstance(part, TextPart | ReasoningPart):
            total += count(part.text)
        elif isinstance(part, ToolCallPart):
            total += count(part.name) + count(json.dumps(part.args, ensure_ascii=False))
        elif isinstance(part, ToolResultPart):
            output = part.output if isinstance(part.output, str) else json.dumps(part.output)
            total += count(output)
    return total
