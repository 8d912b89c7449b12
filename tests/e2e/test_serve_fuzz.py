"""Random request bodies against `rag serve` (the app under a real uvicorn on loopback): every answer is
2xx, or 4xx in OpenAI's error shape; the server stays up; `/health` keeps answering while they run.

Whether a request blocks the event loop is pinned by order, not by a clock: a search held open inside
the embedder must not stop `/health` from answering before it is let go.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag.documents import Document, SearchRequest
from rag.embeddings import HashingEmbedding
from rag.models import ExtractiveChatModel
from rag.serve import RagService, ServeConfig, create_app
from stores import NumpyVectorStore
from tests.e2e.serve_helpers import ThreadServer

# Plain words, odd Unicode and lone surrogates (which JSON can spell and UTF-8 cannot encode).
_TEXT = st.sampled_from(["beacon", "when is the beacon lit?", "\ud800", "dusk \udfff", " ", ""]) | st.text(
    st.characters(codec=None, exclude_categories=()), max_size=30
)
_LEAF = st.none() | st.booleans() | st.integers() | st.floats() | _TEXT
_JSON = st.recursive(
    _LEAF, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3)
)
# Small filters, broken ones, and one of 90,000 clauses (990 KB: under the body limit, over the filter's).
_HUGE_FILTER = " AND ".join(["n == 1"] * 90_000)
_FILTERS = st.sampled_from(
    ["n == 1", "n IN [1, 2] AND NOT source == 'a.md'", "n = 1", "(", "a" * 3, "", _HUGE_FILTER]
)
_MESSAGE = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "user", "assistant", "system", "tool", 7]), "content": _TEXT | _JSON}
)
_CHAT_FIELDS = {
    "model": st.sampled_from(["rag", "other"]) | _JSON,
    "messages": st.lists(_MESSAGE, max_size=3) | _JSON,
    "stream": st.booleans() | _JSON,
    "temperature": st.floats() | _JSON,
    "top_p": st.floats() | _JSON,
    "max_tokens": st.integers() | _JSON,
    "stop": st.lists(_TEXT, max_size=2) | _JSON,
    "seed": st.integers() | _JSON,
    "user": _TEXT | _JSON,
    "stream_options": st.fixed_dictionaries({"include_usage": _JSON}) | _JSON,
    "top_k": st.integers(-2, 50) | _JSON,
    "filter": _FILTERS | _JSON,
    "mode": st.sampled_from(["vector", "lexical", "hybrid"]) | _JSON,
    "similarity_threshold": st.floats() | _JSON,
}
_SEARCH_FIELDS = {
    "query": _TEXT | _JSON,
    "top_k": st.integers(-2, 50) | _JSON,
    "filter": _FILTERS | _JSON,
    "mode": st.sampled_from(["vector", "lexical", "hybrid"]) | _JSON,
    "fusion": st.sampled_from(["rrf", "weighted"]) | _JSON,
    "vector_weight": st.floats() | _JSON,
    "diversity": st.floats() | _JSON,
    "exact": st.booleans() | _JSON,
    "keep_duplicates": st.booleans() | _JSON,
    "qury": _JSON,
}


def _objects(fields: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[Any]:
    """Objects holding some of `fields` (each with a plausible or an arbitrary value), or any JSON."""
    subsets = st.lists(st.sampled_from(sorted(fields)), unique=True, max_size=len(fields))
    chosen = subsets.flatmap(lambda names: st.fixed_dictionaries({name: fields[name] for name in names}))
    return chosen | _JSON


def _encoded(value: Any) -> bytes:
    # allow_nan: NaN and Infinity go on the wire as JSON's common extension spells them;
    # ensure_ascii: lone surrogates travel as \\ud800 escapes, as a hostile client would send them.
    return json.dumps(value, allow_nan=True).encode()


def _nested(levels: int) -> bytes:
    return b'{"model": "rag", "messages": ' + b"[" * levels + b"]" * levels + b"}"


_BODIES = st.one_of(
    st.tuples(st.just("/v1/chat/completions"), _objects(_CHAT_FIELDS).map(_encoded)),
    st.tuples(st.just("/v1/search"), _objects(_SEARCH_FIELDS).map(_encoded)),
    st.tuples(st.sampled_from(["/v1/chat/completions", "/v1/search"]), st.binary(max_size=60)),
    st.tuples(st.just("/v1/chat/completions"), st.integers(1, 150_000).map(_nested)),
)


class _HealthProbe:
    """Asks `/health` every 50 ms from its own thread; records failures (no answer in 10 s is one)."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.failures: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        with httpx.Client(base_url=self.base, timeout=10) as client:
            while not self._stop.is_set():
                try:
                    status = client.get("/health").status_code
                    if status != 200:
                        self.failures.append(f"status {status}")
                except httpx.HTTPError as exc:
                    self.failures.append(repr(exc))
                self._stop.wait(0.05)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=20)


@pytest.fixture(scope="module")
def server() -> Iterator[ThreadServer]:
    store = NumpyVectorStore(HashingEmbedding(dimensions=64))
    store.add(
        [
            Document("d1", "The beacon is lit at dusk.", {"source": "beacon.md", "n": 1}),
            Document("d2", "The harbour closes at noon.", {"source": "harbour.md", "n": 2}),
        ]
    )
    service = RagService(store, ExtractiveChatModel(), SearchRequest("defaults"))
    running = ThreadServer(create_app(service, ServeConfig(rate_limit=0)))
    yield running
    running.stop()


def test_random_bodies_get_2xx_or_4xx_in_openai_shape_and_health_keeps_answering(
    server: ThreadServer,
) -> None:
    probe = _HealthProbe(server.base)
    client = httpx.Client(base_url=server.base, timeout=30)

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(_BODIES)
    def check(case: tuple[str, bytes]) -> None:
        path, body = case
        response = client.post(path, content=body, headers={"Content-Type": "application/json"})
        assert response.status_code < 500, (path, body, response.text)
        if response.status_code >= 400:
            error = response.json()["error"]
            assert set(error) == {"message", "type", "param", "code"}, response.text
            assert isinstance(error["message"], str) and error["message"]

    try:
        check()
    finally:
        client.close()
        probe.stop()
    assert httpx.get(f"{server.base}/health").status_code == 200  # still up
    assert probe.failures == []


class _HeldEmbedding(HashingEmbedding):
    """Hashing vectors, except that embedding a text containing "hold" waits until `release` is set."""

    def __init__(self) -> None:
        super().__init__(dimensions=64)
        self.entered = threading.Event()
        self.release = threading.Event()

    def embed(self, texts: Any) -> Any:
        if any("hold" in text for text in texts):
            self.entered.set()
            assert self.release.wait(30), "the test never let the held search go"
        return super().embed(texts)


def test_health_answers_while_a_search_is_held_inside_the_embedder() -> None:
    embedding = _HeldEmbedding()
    store = NumpyVectorStore(embedding)
    store.add([Document("d1", "The beacon is lit at dusk.", {"source": "beacon.md"})])
    service = RagService(store, ExtractiveChatModel(), SearchRequest("defaults"))
    running = ThreadServer(create_app(service, ServeConfig(rate_limit=0)))
    answers: list[int] = []
    held = threading.Thread(
        target=lambda: answers.append(
            httpx.post(f"{running.base}/v1/search", json={"query": "hold the beacon"}, timeout=60).status_code
        )
    )
    try:
        held.start()
        assert embedding.entered.wait(30), "the held search never reached the embedder"
        # The search is now parked inside a worker thread: the event loop must still serve /health.
        assert httpx.get(f"{running.base}/health", timeout=20).status_code == 200
        assert answers == []  # answered before the search was let go
    finally:
        embedding.release.set()
        held.join(timeout=60)
        running.stop()
    assert answers == [200]
