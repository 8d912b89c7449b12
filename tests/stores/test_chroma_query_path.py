"""The Chroma store's plain vector search (issue 17): as little of our own work as raw chromadb allows,
with unchanged answers.

Speed itself is measured by benchmarks/chroma_speed.py, never here. These tests pin what the speed
work must not change (the query vector bit for bit, Chroma's answer turned into the same ranked hits,
errors that still name the collection) and, as a clock-free stand-in for speed, how many Python
calls of ours one search makes: each was a few microseconds with the caches cold after Chroma's own
search, and the old path made over a hundred more per query.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import numpy as np
import pytest

from rag import Document, SearchRequest
from rag.errors import EmbeddingError, StoreError
from stores import ChromaVectorStore
from stores.chroma.nearest import _answer, _score_of, ranked
from stores.chroma.search import query_vector, rows_from_query
from stores.numpy.embed import embed_queries

ROOT = Path(__file__).resolve().parents[2]
DIMS = 16


class _Fixed:
    """An embedding model whose next answer the test sets (any array, shape or dtype)."""

    def __init__(self, dimensions: int = DIMS) -> None:
        self.dimensions = dimensions
        self.name = f"fixed-{dimensions}"
        self.answer: Any = None

    def embed(self, texts: list[str]) -> Any:
        answer = self.answer
        return answer.copy() if isinstance(answer, np.ndarray) else answer


def _both(model: _Fixed, answer: Any) -> tuple[np.ndarray, np.ndarray]:
    """(`query_vector`, `embed_queries`) of one answer of the model."""
    model.answer = answer
    fast = query_vector(model, "q")  # type: ignore[arg-type]
    model.answer = answer
    return fast, embed_queries(model, ["q"])[0]  # type: ignore[arg-type]


@pytest.mark.parametrize("dimensions", [1, 3, 8, 127, 384, 1536])
def test_the_query_vector_is_bit_for_bit_what_the_numpy_store_computes(dimensions: int) -> None:
    rng = np.random.default_rng(dimensions)
    model = _Fixed(dimensions)
    for scale in (1e-30, 1e-20, 1e-3, 1.0, 1e3, 1e15):
        for _ in range(40):
            answer = (rng.standard_normal((1, dimensions)) * scale).astype(np.float32)
            fast, reference = _both(model, answer)
            assert fast.dtype == np.float32 and fast.shape == (dimensions,)
            assert fast.tobytes() == reference.tobytes()
    # Unit rows as models return them (normalised in float64 or in float32): mostly norm 1 exactly.
    for _ in range(200):
        raw = rng.standard_normal((1, dimensions))
        for unit in (
            raw / np.linalg.norm(raw),
            raw.astype(np.float32) / np.linalg.norm(raw.astype(np.float32)),
        ):
            fast, reference = _both(model, unit.astype(np.float32))
            assert fast.tobytes() == reference.tobytes()


def test_unusual_answers_take_the_general_path_with_the_same_result() -> None:
    model = _Fixed()
    row = np.linspace(-1.0, 2.0, DIMS)
    frozen = row.astype(np.float32)[None, :]
    frozen.flags.writeable = False
    answers = [
        np.zeros((1, DIMS), np.float32),  # an empty text: stays zero
        row[None, :],  # float64
        np.repeat(row.astype(np.float32), 2)[None, ::2],  # a strided view
        frozen,  # read-only
        np.full((1, DIMS), 3e19, np.float32),  # squares overflow float32: the general path decides
    ]
    for answer in answers:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # the overflow warns on both paths
            fast, reference = _both(model, answer)
        assert fast.dtype == np.float32 and fast.tobytes() == reference.tobytes()


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (np.full((1, DIMS), np.nan, np.float32), "returned non-finite values"),
        (np.array([[np.inf] + [0.0] * (DIMS - 1)], np.float32), "returned non-finite values"),
        (np.ones((2, DIMS), np.float32), r"returned shape \(2, 16\) for 1 texts, expected \(1, 16\)"),
        (np.ones((1, DIMS + 1), np.float32), r"returned shape \(1, 17\) for 1 texts, expected \(1, 16\)"),
        ("not an array", "returned shape None for 1 texts"),
    ],
)
def test_bad_query_vectors_are_refused_naming_the_model(answer: Any, message: str) -> None:
    model = _Fixed()
    model.answer = answer
    with pytest.raises(EmbeddingError, match=message) as fast:
        query_vector(model, "q")  # type: ignore[arg-type]
    model.answer = answer
    with pytest.raises(EmbeddingError) as reference:
        embed_queries(model, ["q"])  # type: ignore[arg-type]
    assert str(fast.value) == str(reference.value) and "'fixed-16'" in str(fast.value)


class _Lookup:
    """Query texts mapped to chosen vectors (documents bring their own)."""

    def __init__(self, vectors: dict[str, np.ndarray]) -> None:
        self.vectors = vectors
        self.dimensions = DIMS
        self.name = f"lookup-{DIMS}"

    def embed(self, texts: list[str]) -> np.ndarray:
        # `np.array`, not `np.stack`: no numpy Python code inside the calls counted below.
        return np.array([self.vectors[text] for text in texts], np.float32)


def _corpus() -> tuple[_Lookup, list[Document]]:
    rng = np.random.default_rng(5)
    vectors = rng.standard_normal((80, DIMS)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors[10:16] = vectors[3]  # exact ties, ordered by id
    vectors[20:23] = 0.0  # zero vectors score 0
    queries = {"tie": vectors[3], **{f"q{i}": rng.standard_normal(DIMS) for i in range(6)}}
    docs = [
        Document(f"d{i:03d}", f"text {i}", {"n": i, "tags": ["a", i]}, embedding=v)
        for i, v in enumerate(vectors)
    ]
    return _Lookup(queries), docs


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaVectorStore]:
    model, docs = _corpus()
    path = tmp_path_factory.mktemp("query-path")
    # ef_search 10: the 80 records are searched by HNSW, the path these tests are about.
    with ChromaVectorStore(model, collection="path", path=path, ef_search=10) as chroma:  # type: ignore[arg-type]
        chroma.add(docs)
        yield chroma


def test_chromas_answer_is_ranked_as_before(store: ChromaVectorStore) -> None:
    """`_answer` (one loop) against the three steps it replaced, on Chroma's real answers."""
    include: Any = ["metadatas", "documents", "distances"]
    for name in ["tie", *(f"q{i}" for i in range(6))]:
        query = query_vector(store.embedding, name)
        for top_k in (1, 5, 12, 80):
            result = store.chroma_collection.query(query_embeddings=[query], n_results=top_k, include=include)
            for threshold in (0.0, 0.1, 0.5, 0.999):
                req = SearchRequest(name, top_k, similarity_threshold=threshold)
                before = ranked(rows_from_query(result), [_score_of(d) for d in result["distances"][0]], req)
                assert _answer(result, req) == before


def test_ties_and_thresholds_on_the_hnsw_path(store: ChromaVectorStore) -> None:
    hits = store.similarity_search(SearchRequest("tie", top_k=7))
    assert [d.id for d in hits] == ["d003", "d010", "d011", "d012", "d013", "d014", "d015"]
    assert {d.score for d in hits} == {1.0}
    assert hits[0].metadata == {"n": 3, "tags": ["a", 3]} and hits[0].text == "text 3"
    everything = store.similarity_search(SearchRequest("q0", top_k=80))
    cut = store.similarity_search(SearchRequest("q0", top_k=80, similarity_threshold=0.2))
    assert cut == [d for d in everything if d.score is not None and d.score >= 0.2]


def _our_calls(run: Any) -> int:
    """Python function calls made by `run()` in this project's packages, `contextlib` and numpy's
    Python layer (chromadb's own, the same for raw chromadb, are not counted)."""
    roots = (str(ROOT / "rag"), str(ROOT / "stores"), str(Path(np.__file__).parent))
    calls = 0

    def profile(frame: FrameType, event: str, arg: object) -> None:
        nonlocal calls
        name = frame.f_code.co_filename
        if event == "call" and (name.startswith(roots) or name.endswith("contextlib.py")):
            calls += 1

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return calls


def test_a_plain_vector_search_makes_few_calls_of_ours(store: ChromaVectorStore) -> None:
    """At most two calls per hit (decode it, build its document) and 20 per search; the old path made
    about 165 for 10 hits (generator context managers, `np.linalg.norm`, a `Row`, a score function, a
    threshold method and a sort key per hit...)."""
    store.similarity_search(SearchRequest("q1", top_k=10))  # the collection's size is known now
    few = _our_calls(lambda: store.similarity_search(SearchRequest("q1", top_k=2)))
    many = _our_calls(lambda: store.similarity_search(SearchRequest("q1", top_k=12)))
    assert (many - few) / 10 <= 2
    assert few - 2 * 2 <= 20


def test_a_failed_query_names_the_collection(tmp_path: Path) -> None:
    model, docs = _corpus()
    chroma = ChromaVectorStore(model, collection="gone", path=tmp_path, ef_search=10)  # type: ignore[arg-type]
    chroma.add(docs)
    assert len(chroma.similarity_search(SearchRequest("q0", top_k=3))) == 3
    chroma.chroma_client.delete_collection("gone")  # behind the store's back
    with pytest.raises(StoreError, match="cannot query the collection 'gone' in Chroma at ") as caught:
        chroma.similarity_search(SearchRequest("q0", top_k=3))
    assert "does not exist" in str(caught.value) and caught.value.__cause__ is not None


class _FailingReads:
    """A real chromadb collection whose first `failures` reads (`get`) raise what Chroma 1.5.9 raised
    when another process deleted records during a paged read (the race itself is timing-dependent:
    9 of 1,800 searches failed in a 40 s run against a server with a deleting second process)."""

    def __init__(self, collection: Any, failures: int, error: Exception | None = None) -> None:
        self.collection = collection
        self.failures = failures
        self.error = error
        self.reads = 0

    def get(self, **options: Any) -> Any:
        from chromadb.errors import InternalError

        self.reads += 1
        if self.reads <= self.failures:
            raise self.error or InternalError("Error executing plan: Internal error: Error finding id")
        return self.collection.get(**options)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.collection, name)


def _exact_ids(store: ChromaVectorStore, name: str) -> list[str]:
    return [d.id for d in store.similarity_search(SearchRequest(name, top_k=5, exact=True))]


def test_a_page_read_failing_once_is_read_again(tmp_path: Path) -> None:
    model, docs = _corpus()
    with ChromaVectorStore(
        model, collection="pages", path=tmp_path, ef_search=10, exact_copy=False
    ) as chroma:  # type: ignore[arg-type]
        chroma.add(docs)
        expected = _exact_ids(chroma, "q2")  # an exact scan reads every vector, page by page
        spy = _FailingReads(chroma._nearest.collection, failures=1)
        chroma._nearest.collection = spy
        assert _exact_ids(chroma, "q2") == expected
        assert spy.reads >= 2


def test_a_page_read_failing_twice_names_the_collection(tmp_path: Path) -> None:
    model, docs = _corpus()
    with ChromaVectorStore(
        model, collection="pages", path=tmp_path, ef_search=10, exact_copy=False
    ) as chroma:  # type: ignore[arg-type]
        chroma.add(docs)
        chroma.similarity_search(SearchRequest("q2", top_k=5))  # the collection's size is known now
        spy = _FailingReads(chroma._nearest.collection, failures=2)
        chroma._nearest.collection = spy
        with pytest.raises(
            StoreError, match=r"cannot read from the collection 'pages' in Chroma at .*Error finding id"
        ):
            _exact_ids(chroma, "q2")
        assert spy.reads == 2


def test_a_lost_server_is_not_read_twice(chroma_server: str) -> None:
    import httpx

    from rag.errors import StoreConnectionError

    model, docs = _corpus()
    with ChromaVectorStore(
        model, collection="pages-lost", url=chroma_server, ef_search=10, exact_copy=False
    ) as chroma:  # type: ignore[arg-type]
        chroma.add(docs)
        chroma.similarity_search(SearchRequest("q2", top_k=5))
        spy = _FailingReads(chroma._nearest.collection, failures=5, error=httpx.ConnectError("refused"))
        chroma._nearest.collection = spy
        with pytest.raises(StoreConnectionError):
            _exact_ids(chroma, "q2")
        assert spy.reads == 1
        chroma._nearest.collection = spy.collection
        chroma.delete(filter="n >= 0")
