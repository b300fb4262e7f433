"""The OpenAI-compatible embedder against a real HTTP server on 127.0.0.1 (see openai_server.py)."""

from __future__ import annotations

import asyncio
import gc
import socket
from collections.abc import Iterator

import pytest

from sleep_recorder import SleepRecorder

np = pytest.importorskip("numpy", reason="numpy is not installed: pip install 'memvault[openai]'")
pytest.importorskip("httpx", reason="httpx is not installed: pip install 'memvault[openai]'")

from memvault.embeddings import Embedder, EmbeddingError, resolve_embedder  # noqa: E402
from memvault.embeddings.openai import OpenAIEmbedder  # noqa: E402
from memvault.errors import ConfigurationError, ValidationError  # noqa: E402

from .openai_server import DEFAULT_DIMENSIONS, DROP, EmbeddingsServer, expected_vector, running_server  # noqa: E402


@pytest.fixture
def server() -> Iterator[EmbeddingsServer]:
    with running_server() as running:
        yield running


def make(server: EmbeddingsServer, **options: object) -> OpenAIEmbedder:
    options.setdefault("api_key", "sk-test")
    return OpenAIEmbedder("text-embedding-3-small", base_url=server.url, **options)  # type: ignore[arg-type]


def expected(texts: list[str], dimensions: int = DEFAULT_DIMENSIONS) -> np.ndarray:
    return np.stack([expected_vector(text, dimensions) for text in texts])


async def test_vectors_come_back_in_input_order_although_the_server_shuffles_them(
    server: EmbeddingsServer,
) -> None:
    texts = [f"text number {i}" for i in range(12)]
    async with make(server) as embedder:
        vectors = await embedder.embed(texts)
    assert server.shuffled_responses == 1, "the server must really have shuffled its data list"
    assert vectors.dtype == np.float32
    assert vectors.shape == (12, DEFAULT_DIMENSIONS)
    np.testing.assert_allclose(vectors, expected(texts), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-6)
    request = server.requests[0]
    assert request.path == "/v1/embeddings"
    assert request.body == {"model": "text-embedding-3-small", "input": texts}


async def test_250_texts_with_batch_size_100_take_three_requests_in_order(server: EmbeddingsServer) -> None:
    texts = [f"message {i}" for i in range(250)]
    async with make(server) as embedder:
        vectors = await embedder.embed(texts)
    assert [len(r.body["input"]) for r in server.requests] == [100, 100, 50]
    assert [t for r in server.requests for t in r.body["input"]] == texts
    np.testing.assert_allclose(vectors, expected(texts), rtol=1e-6, atol=1e-6)


async def test_batch_size_option_is_honoured(server: EmbeddingsServer) -> None:
    async with make(server, batch_size=4) as embedder:
        await embedder.embed([str(i) for i in range(10)])
    assert [len(r.body["input"]) for r in server.requests] == [4, 4, 2]


async def test_retries_a_429_after_its_retry_after_then_a_503_with_backoff(server: EmbeddingsServer) -> None:
    server.fail_next(429, {"error": {"message": "Rate limit reached"}}, headers={"Retry-After": "2"})
    server.fail_next(503, {"error": {"message": "overloaded"}})
    sleep = SleepRecorder()
    async with make(server, sleep=sleep, backoff_base=0.5) as embedder:
        vectors = await embedder.embed(["green tea", "black coffee"])
    assert len(server.requests) == 3
    assert all(r.body == server.requests[0].body for r in server.requests)
    assert sleep.delays[0] == 2.0  # Retry-After honoured exactly
    assert 0.5 <= sleep.delays[1] <= 1.0  # backoff_base * 2**1, scaled by jitter in [0.5, 1]
    np.testing.assert_allclose(vectors, expected(["green tea", "black coffee"]), rtol=1e-6, atol=1e-6)


async def test_retry_after_ms_and_the_cap_on_retry_after(server: EmbeddingsServer) -> None:
    server.fail_next(429, headers={"retry-after-ms": "250"})
    server.fail_next(429, headers={"Retry-After": "3600"})
    sleep = SleepRecorder()
    async with make(server, sleep=sleep, max_retry_after=30.0) as embedder:
        await embedder.embed(["x"])
    assert sleep.delays == [0.25, 30.0]


async def test_backoff_grows_exponentially_with_jitter_and_is_capped(server: EmbeddingsServer) -> None:
    for _ in range(5):
        server.fail_next(500)
    sleep = SleepRecorder()
    async with make(server, sleep=sleep, backoff_base=1.0, backoff_max=4.0) as embedder:
        await embedder.embed(["x"])
    for delay, ceiling in zip(sleep.delays, [1.0, 2.0, 4.0, 4.0, 4.0], strict=True):
        assert ceiling / 2 <= delay <= ceiling


async def test_gives_up_after_max_retries_with_a_clear_error(server: EmbeddingsServer) -> None:
    for _ in range(3):
        server.fail_next(503, {"error": {"message": "the engine is overloaded"}})
    sleep = SleepRecorder()
    async with make(server, sleep=sleep, max_retries=2) as embedder:
        with pytest.raises(EmbeddingError, match=r"503 after 3 attempts: the engine is overloaded"):
            await embedder.embed(["x"])
    assert len(server.requests) == 3
    assert len(sleep.delays) == 2


async def test_a_400_is_a_clear_embedding_error_and_is_not_retried(server: EmbeddingsServer) -> None:
    server.fail_next(400, {"error": {"message": "This model's maximum context length is 8192 tokens"}})
    sleep = SleepRecorder()
    async with make(server, sleep=sleep) as embedder:
        with pytest.raises(EmbeddingError) as caught:
            await embedder.embed(["a very long text"])
    message = str(caught.value)
    assert "400" in message
    assert "maximum context length is 8192 tokens" in message
    assert "input limit" in message and "text-embedding-3-small" in message
    assert server.url in message
    assert len(server.requests) == 1 and sleep.delays == []


async def test_a_401_says_to_check_the_api_key(server: EmbeddingsServer) -> None:
    server.fail_next(401, {"error": {"message": "Incorrect API key provided"}})
    async with make(server) as embedder:
        with pytest.raises(EmbeddingError, match=r"401.*Incorrect API key.*OPENAI_API_KEY"):
            await embedder.embed(["x"])


async def test_a_wrong_base_url_gets_a_404_hint(server: EmbeddingsServer) -> None:
    embedder = OpenAIEmbedder(base_url=server.url.removesuffix("/v1"), api_key="k")
    with pytest.raises(EmbeddingError, match=r"404.*check base_url"):
        await embedder.embed(["x"])
    await embedder.aclose()
    assert server.requests[0].path == "/embeddings"


async def test_dimensions_are_learned_from_the_first_result(server: EmbeddingsServer) -> None:
    async with make(server) as embedder:
        assert embedder.dimensions is None
        assert (await embedder.embed([])).shape == (0, 0)
        assert server.requests == []  # nothing to embed, nothing sent
        await embedder.embed(["one"])
        assert embedder.dimensions == DEFAULT_DIMENSIONS
        assert (await embedder.embed([])).shape == (0, DEFAULT_DIMENSIONS)


async def test_requested_dimensions_are_sent_and_known_up_front(server: EmbeddingsServer) -> None:
    async with make(server, dimensions=4) as embedder:
        assert embedder.dimensions == 4
        vectors = await embedder.embed(["one", "two"])
    assert server.requests[0].body["dimensions"] == 4
    np.testing.assert_allclose(vectors, expected(["one", "two"], 4), rtol=1e-6, atol=1e-6)


async def test_a_server_changing_width_is_an_error(server: EmbeddingsServer) -> None:
    async with make(server) as embedder:
        await embedder.embed(["one"])
        server.dimensions = DEFAULT_DIMENSIONS * 2
        with pytest.raises(EmbeddingError, match=r"16-dimensional.*earlier vectors had 8"):
            await embedder.embed(["two"])


async def test_sends_the_bearer_token_from_the_environment_by_default(
    server: EmbeddingsServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    async with OpenAIEmbedder(base_url=server.url, headers={"OpenAI-Organization": "org-1"}) as embedder:
        await embedder.embed(["x"])
    headers = server.requests[0].headers
    assert headers["authorization"] == "Bearer sk-from-env"
    assert headers["openai-organization"] == "org-1"
    assert headers["content-type"] == "application/json"
    assert "sk-from-env" not in repr(embedder)


async def test_a_local_server_needs_no_key(server: EmbeddingsServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    async with OpenAIEmbedder(base_url=server.url) as embedder:
        await embedder.embed(["x"])
    assert "authorization" not in server.requests[0].headers


def test_api_openai_com_without_a_key_is_refused_up_front(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ConfigurationError, match=r"OPENAI_API_KEY.*base_url"):
        OpenAIEmbedder()


def test_base_url_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1/")
    assert OpenAIEmbedder().base_url == "http://127.0.0.1:9/v1"


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("base_url", "127.0.0.1:8080/v1"),
        ("batch_size", 0),
        ("dimensions", -1),
        ("max_retries", -1),
        ("timeout", 0),
    ],
)
def test_bad_options_are_configuration_errors(option: str, value: object) -> None:
    options: dict[str, object] = {"base_url": "http://127.0.0.1:9/v1", "api_key": "k", option: value}
    with pytest.raises(ConfigurationError, match=option):
        OpenAIEmbedder(**options)  # type: ignore[arg-type]


async def test_connection_errors_are_retried_then_reported() -> None:
    with socket.socket() as probe:  # a loopback port with nothing listening
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    sleep = SleepRecorder()
    embedder = OpenAIEmbedder(base_url=f"http://127.0.0.1:{port}/v1", max_retries=2, sleep=sleep)
    with pytest.raises(EmbeddingError, match=r"could not reach .* after 3 attempts.*check base_url"):
        await embedder.embed(["x"])
    assert len(sleep.delays) == 2
    await embedder.aclose()


async def test_a_dropped_connection_is_retried(server: EmbeddingsServer) -> None:
    server.fail_next(DROP)
    sleep = SleepRecorder()
    async with make(server, sleep=sleep) as embedder:
        vectors = await embedder.embed(["x"])
    assert len(server.requests) == 2 and len(sleep.delays) == 1
    np.testing.assert_allclose(vectors, expected(["x"]), rtol=1e-6, atol=1e-6)


async def test_a_body_that_is_not_json_is_an_error(server: EmbeddingsServer) -> None:
    server.fail_next(200, b"this is not json")
    async with make(server) as embedder:
        with pytest.raises(EmbeddingError, match=r"not JSON"):
            await embedder.embed(["x"])


@pytest.mark.parametrize(
    ("body", "pattern"),
    [
        ({"data": []}, r"returned 0 embeddings for 2 texts"),
        ({"nothing": True}, r"returned no embeddings for 2 texts"),
        ({"data": [{"index": 0, "embedding": [1.0]}, {"index": 0, "embedding": [1.0]}]}, r"indexes \[0, 0\]"),
        ({"data": [{"index": 0}, {"index": 1}]}, r'without an "embedding"'),
        (
            {"data": [{"index": 0, "embedding": [1.0, 2.0]}, {"index": 1, "embedding": [1.0]}]},
            r"not a list of equal",
        ),
        ({"data": [{"index": 0, "embedding": [1.0, "NaN"]}, {"index": 1, "embedding": [1.0, 2.0]}]}, r"NaN"),
    ],
)
async def test_malformed_answers_are_embedding_errors(
    server: EmbeddingsServer, body: object, pattern: str
) -> None:
    server.fail_next(200, body)
    async with make(server) as embedder:
        with pytest.raises(EmbeddingError, match=pattern):
            await embedder.embed(["a", "b"])


async def test_a_bare_string_is_a_validation_error(server: EmbeddingsServer) -> None:
    async with make(server) as embedder:
        with pytest.raises(ValidationError, match=r"pass \[text\]"):
            await embedder.embed("hello")
    assert server.requests == []


@pytest.mark.filterwarnings("ignore::ResourceWarning", "ignore::pytest.PytestUnraisableExceptionWarning")
def test_works_across_event_loops(server: EmbeddingsServer) -> None:
    """Two asyncio.run calls: the embedder makes a new HTTP client for the new loop.

    The first loop's client cannot be closed from the second loop; it is dropped, and Python warns
    (ResourceWarning) when it collects its socket. Closing the embedder in each loop avoids that.
    """
    embedder = make(server)
    first = asyncio.run(embedder.embed(["x"]))
    second = asyncio.run(embedder.embed(["x"]))
    np.testing.assert_array_equal(first, second)
    asyncio.run(embedder.aclose())
    gc.collect()  # collect the dropped client here, under this test's warning filter


async def test_an_external_client_is_used_and_left_open(server: EmbeddingsServer) -> None:
    import httpx

    async with httpx.AsyncClient() as client:
        embedder = make(server, client=client)
        await embedder.embed(["x"])
        await embedder.aclose()
        assert not client.is_closed


async def test_resolve_builds_it_and_it_is_an_embedder(server: EmbeddingsServer) -> None:
    embedder = resolve_embedder(
        "openai/text-embedding-3-small", base_url=server.url, api_key="k", batch_size=7
    )
    assert isinstance(embedder, OpenAIEmbedder) and isinstance(embedder, Embedder)
    assert embedder.model == "openai/text-embedding-3-small"
    await embedder.embed([str(i) for i in range(8)])
    assert [len(r.body["input"]) for r in server.requests] == [7, 1]
    await embedder.aclose()
