"""Token counting: the offline estimate, the exact offline counters, and what a message costs.

The estimate is checked against exact o200k_base counts on three samples under tests/data/tokens
(English prose, Python code, Chinese prose): the exact counter comes from the ``tokens`` extra,
which the test environment installs (scripts/test).
"""

from __future__ import annotations

import gzip
import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memvault import (
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from memvault.errors import ConfigurationError, MissingExtraError
from memvault.rules import tiktoken_counts
from memvault.rules.tiktoken_counts import TiktokenCounter
from memvault.rules.tokens import (
    MESSAGE_OVERHEAD,
    _pieces_tokens,
    estimate_tokens,
    message_tokens,
    resolve_token_counter,
)

CJK_RANGES = [(0x4E00, 0x9FFF), (0x3040, 0x30FF), (0xAC00, 0xD7AF), (0x3400, 0x4DBF)]
cjk_text = st.lists(
    st.one_of(*(st.integers(lo, hi) for lo, hi in CJK_RANGES)).map(chr), min_size=1, max_size=50
).map("".join)
text = st.text(st.characters(codec="utf-8"), max_size=200)


@pytest.mark.parametrize(
    ("sample", "expected"),
    [
        ("", 0),
        ("   \n\t ", 0),
        ("hello", 1),
        ("hello world", 2),
        ("a" * 8, 1),
        ("a" * 9, 2),  # long words count as several tokens
        ("a" * 80, 10),
        ("1234567", 3),  # digits in runs of up to three
        ("x = f(y);", 6),  # symbols: "(y" is a word with its symbol, ");" a run (o200k_base: 5)
        ("self._name", 4),  # a word, the run "._" (1.5), a word (o200k_base: 3)
        ("TokenBucket", 2),  # a capital starts a new word (o200k_base: 2)
        ("你好世界", 4),  # 0.95 per Chinese character, rounded up (o200k_base: 2)
        ("こんにちは", 3),  # 0.6 per kana (o200k_base: 1)
        ("안녕하세요", 3),  # 0.6 per hangul syllable (o200k_base: 2)
        ("Привет", 2),  # another script: one token per 4 letters (o200k_base: 2)
        ("。", 1),  # any character but whitespace costs something
    ],
)
def test_estimate_examples(sample: str, expected: int) -> None:
    assert estimate_tokens(sample) == expected


# ASCII words, capitals, digits, every ASCII symbol, spaces and a few other letters: the chunks
# the estimate costs without the pieces' pattern and their near misses ("iPhone", "a.b", "(x_").
chunky_text = st.text(st.sampled_from(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 \t\n"
    "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~éßÀ\u00d7你の。"), max_size=80)


@given(st.one_of(chunky_text, text))
def test_plain_words_are_costed_as_their_pieces(sample: str) -> None:
    assert estimate_tokens(sample) == _pieces_tokens(sample)


@given(text, text)
def test_estimate_grows_with_appended_text(head: str, tail: str) -> None:
    assert estimate_tokens(head + tail) >= estimate_tokens(head)


@given(text, text)
def test_estimate_adds_over_whitespace(left: str, right: str) -> None:
    assert estimate_tokens(f"{left} {right}") == estimate_tokens(left) + estimate_tokens(right)


@given(text)
def test_estimate_is_bounded_by_characters(sample: str) -> None:
    tokens = estimate_tokens(sample)
    assert 0 <= tokens <= len(sample)
    assert (tokens == 0) == all(c.isspace() for c in sample)


@given(cjk_text)
def test_cjk_counts_between_six_tenths_and_one_per_character(sample: str) -> None:
    assert 0.6 * len(sample) <= estimate_tokens(sample) <= len(sample)


def test_cjk_counts_far_more_than_chars_over_four() -> None:
    sample = "我喜欢喝绿茶因为它很健康" * 10
    assert estimate_tokens(sample) > 3 * len(sample) / 4


def counted(message: Message) -> int:
    return message_tokens(message, len)


@pytest.mark.parametrize(
    ("parts", "expected"),
    [
        ([], 0),
        ([TextPart(text="hello")], 5),
        ([ReasoningPart(text="think")], 5),
        ([TextPart(text="ab"), TextPart(text="cd")], 4),
        (
            [ToolCallPart(tool_call_id="c1", name="lookup", args={"q": "é"})],
            len("lookup") + len(json.dumps({"q": "é"}, ensure_ascii=False)),
        ),
        ([ToolCallPart(tool_call_id="c1", name="now")], len("now") + len("{}")),
        ([ToolResultPart(tool_call_id="c1", output="sunny")], len("sunny")),
        ([ToolResultPart(tool_call_id="c1", output={"t": 21})], len(json.dumps({"t": 21}))),
        ([ToolResultPart(tool_call_id="c1")], len("null")),
    ],
)
def test_message_tokens_counts_text_reasoning_and_tool_parts(parts: list, expected: int) -> None:
    assert counted(Message(role="assistant", parts=parts)) == MESSAGE_OVERHEAD + expected


def test_message_tokens_uses_the_default_estimate() -> None:
    message = Message(
        role="assistant",
        parts=[
            TextPart(text="checking the weather"),
            ToolCallPart(tool_call_id="c1", name="weather", args={"city": "Paris"}),
        ],
    )
    expected = (
        MESSAGE_OVERHEAD
        + estimate_tokens("checking the weather")
        + estimate_tokens("weather")
        + estimate_tokens('{"city": "Paris"}')
    )
    assert message_tokens(message) == expected


@pytest.mark.parametrize(
    "part",
    [
        ToolCallPart(tool_call_id="c1", name="search", args={"query": "green tea"}),
        ToolResultPart(tool_call_id="c1", output="a long tool result " * 20),
        ToolResultPart(tool_call_id="c1", output={"rows": [1, 2, 3]}),
    ],
)
def test_tool_parts_cost_tokens(part: ToolCallPart | ToolResultPart) -> None:
    base = Message.assistant("ok")
    with_tool = base.model_copy(update={"parts": [*base.parts, part]})
    assert message_tokens(with_tool) > message_tokens(base)



# --- The estimate against exact o200k_base counts -------------------------------------------

SAMPLES_DIR = Path(__file__).parent / "data" / "tokens"
SAMPLES = ["english.txt", "code.py.txt", "chinese.txt"]


def read_sample(name: str) -> str:
    return (SAMPLES_DIR / name).read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def o200k() -> TiktokenCounter:
    counter = resolve_token_counter("o200k_base")
    assert isinstance(counter, TiktokenCounter)
    return counter


@pytest.mark.parametrize("name", SAMPLES)
def test_samples_are_realistic_sizes(name: str) -> None:
    assert len(read_sample(name)) >= 2000


@pytest.mark.parametrize("name", SAMPLES)
def test_estimate_is_within_ten_percent_of_o200k(name: str, o200k: TiktokenCounter) -> None:
    text = read_sample(name)
    exact, estimate = o200k(text), estimate_tokens(text)
    ratio = estimate / exact
    assert 0.9 <= ratio <= 1.1, (
        f"{name}: estimate {estimate} / o200k_base {exact} = {ratio:.3f} "
        f"(chars/4: {len(text) / 4 / exact:.3f})"
    )


def test_chars_over_four_undercounts_chinese_more_than_twice(o200k: TiktokenCounter) -> None:
    # Why the estimate counts CJK characters one by one: a Chinese character is about one
    # token, not a quarter of one, so characters / 4 lets a budget hold 3x the text it should.
    text = read_sample("chinese.txt")
    ratio = o200k(text) / (len(text) / 4)
    assert ratio > 2, f"o200k_base / (chars/4) = {ratio:.2f} on Chinese"


# --- resolve_token_counter ------------------------------------------------------------------


@pytest.mark.parametrize("spec", [None, "estimate", " Estimate "])
def test_resolve_the_estimate(spec: str | None) -> None:
    assert resolve_token_counter(spec) is estimate_tokens
    assert resolve_token_counter() is estimate_tokens


def test_resolve_a_function_as_it_is() -> None:
    def count(text: str) -> int:
        return len(text.split())

    assert resolve_token_counter(count) is count
    assert resolve_token_counter(len) is len


@pytest.mark.parametrize(
    ("spec", "encoding"),
    [
        ("o200k_base", "o200k_base"),
        ("O200K_BASE", "o200k_base"),
        ("tiktoken:o200k_base", "o200k_base"),
        ("gpt-4o", "o200k_base"),
        ("gpt-4o-mini", "o200k_base"),
        ("GPT-4.1-mini", "o200k_base"),
        ("o3", "o200k_base"),
        ("o200k_harmony", "o200k_base"),  # gpt-oss: o200k_base plus special tokens
        ("gpt-oss-120b", "o200k_base"),
        ("cl100k_base", "cl100k_base"),
        ("tiktoken:cl100k_base", "cl100k_base"),
        ("gpt-4", "cl100k_base"),
        ("gpt-3.5-turbo", "cl100k_base"),
    ],
)
def test_resolve_an_exact_counter(spec: str, encoding: str) -> None:
    counter = resolve_token_counter(spec)
    assert isinstance(counter, TiktokenCounter)
    assert counter.encoding_name == encoding
    assert counter is tiktoken_counts.tiktoken_counter(encoding)  # built once, shared


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("nonsense", r"unknown token counter 'nonsense': expected 'estimate', an encoding \(o200k_base"),
        ("", "unknown token counter ''"),
        ("tiktoken:p50k_base", "unknown tiktoken encoding in token counter 'tiktoken:p50k_base'"),
        ("tiktoken:gpt-4o", "unknown tiktoken encoding"),
        ("text-davinci-003", "uses the p50k_base encoding, which memvault cannot count offline"),
        (42, "a token counter spec must be None, 'estimate', .* got int 42"),
        (b"o200k_base", "got bytes"),
    ],
)
def test_resolve_a_bad_spec(spec: object, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        resolve_token_counter(spec)  # type: ignore[arg-type]


def test_bad_spec_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="unknown token counter"):
        resolve_token_counter("gtp-4o")


@pytest.mark.parametrize(
    ("spec", "text", "expected"),
    [
        ("o200k_base", "", 0),
        ("o200k_base", "hello world", 2),
        ("o200k_base", "x = f(y);", 5),
        ("o200k_base", "你好世界", 2),
        ("cl100k_base", "hello world", 2),
        ("cl100k_base", "你好世界", 5),
    ],
)
def test_exact_counts(spec: str, text: str, expected: int) -> None:
    assert resolve_token_counter(spec)(text) == expected


def test_special_token_text_counts_as_ordinary_text(o200k: TiktokenCounter) -> None:
    assert o200k("<|endoftext|>") == o200k("<|endoftext") + o200k("|>") > 1


def test_exact_counter_in_message_tokens(o200k: TiktokenCounter) -> None:
    message = Message.user("hello world")
    assert message_tokens(message, o200k) == MESSAGE_OVERHEAD + 2


@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base"])
def test_exact_counts_agree_with_bpe_openai(encoding: str) -> None:
    # bpe-openai's own Rust tokenizer is an independent implementation of the same encodings.
    bpe_openai = pytest.importorskip("bpe_openai")
    reference = bpe_openai.get_encoding(encoding)
    counter = tiktoken_counts.tiktoken_counter(encoding)
    for name in SAMPLES:
        text = read_sample(name)
        assert counter(text) == len(reference.encode_ordinary(text)), name


# --- Offline, and what happens without the extra --------------------------------------------


@pytest.fixture
def fresh_counters() -> Iterator[None]:
    """Forget the built counters so the test builds them again, and again after it."""
    tiktoken_counts._build.cache_clear()
    yield
    tiktoken_counts._build.cache_clear()


def test_exact_counter_works_without_network(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_counters: None
) -> None:
    import tiktoken.load

    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("token counting tried to reach the network")

    def no_download(*args: object, **kwargs: object) -> bytes:
        raise AssertionError("token counting used tiktoken's downloader")

    cache = tmp_path / "tiktoken-cache"
    cache.mkdir()
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "getaddrinfo", no_network)
    monkeypatch.setattr(tiktoken.load, "read_file", no_download)
    monkeypatch.setattr(tiktoken.load, "read_file_cached", no_download)

    counter = resolve_token_counter("gpt-4o")
    assert counter("hello world") == 2
    assert resolve_token_counter("cl100k_base")("hello world") == 2
    assert list(cache.iterdir()) == []


def test_missing_tiktoken_names_the_extra(monkeypatch: pytest.MonkeyPatch, fresh_counters: None) -> None:
    monkeypatch.setitem(sys.modules, "tiktoken", None)
    monkeypatch.setitem(sys.modules, "tiktoken.model", None)
    with pytest.raises(MissingExtraError, match=r"'tiktoken': pip install 'memvault\[tokens\]'") as info:
        resolve_token_counter("o200k_base")
    assert info.value.extra == "tokens"
    with pytest.raises(MissingExtraError, match=r"memvault\[tokens\]"):
        resolve_token_counter("gpt-4o")
    assert resolve_token_counter("estimate") is estimate_tokens  # the estimate needs nothing


def test_missing_bpe_openai_names_the_extra(monkeypatch: pytest.MonkeyPatch, fresh_counters: None) -> None:
    real_find_spec = tiktoken_counts.importlib.util.find_spec

    def find_spec(name: str, package: str | None = None) -> object:
        return None if name == "bpe_openai" else real_find_spec(name, package)

    monkeypatch.setattr(tiktoken_counts.importlib.util, "find_spec", find_spec)
    with pytest.raises(MissingExtraError, match=r"'bpe-openai': pip install 'memvault\[tokens\]'"):
        resolve_token_counter("o200k_base")


def test_corrupt_ranks_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_counters: None
) -> None:
    corrupt = tmp_path / "o200k_base.tiktoken.gz"
    corrupt.write_bytes(gzip.compress(b"aGVsbG8= 0\n"))
    monkeypatch.setattr(tiktoken_counts, "_ranks_file", lambda name: corrupt)
    with pytest.raises(ConfigurationError, match="differ from the file tiktoken expects"):
        resolve_token_counter("o200k_base")


def test_importing_memvault_does_not_load_tiktoken() -> None:
    code = (
        "import sys, memvault, memvault.rules.tokens\n"
        "memvault.rules.tokens.resolve_token_counter('estimate')\n"
        "loaded = {'tiktoken', 'bpe_openai', 'memvault.rules.tiktoken_counts'} & set(sys.modules)\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_memory_options_take_a_counter_name() -> None:
    from memvault import MemoryOptions
    from memvault.errors import ConfigurationError

    exact = MemoryOptions(token_counter="gpt-4o").token_counter  # type: ignore[arg-type]
    assert exact("hello world") == resolve_token_counter("o200k_base")("hello world") == 2
    with pytest.raises(ConfigurationError, match="unknown token counter"):
        MemoryOptions(token_counter="nope")  # type: ignore[arg-type]
