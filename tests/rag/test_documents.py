"""Document and SearchRequest: validation, defaults and the errors users see."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rag import Document, SearchRequest
from rag.errors import FilterSyntaxError, InvalidRequestError, RagError
from rag.filters import key


def test_document_drops_none_metadata_and_copies_lists() -> None:
    tags = ["a", "b"]
    doc = Document("d1", "text", {"tags": tags, "gone": None, "n": 2, "x": 1.5, "ok": True})
    tags.append("c")
    assert doc.metadata == {"tags": ["a", "b"], "n": 2, "x": 1.5, "ok": True}


@pytest.mark.parametrize(
    ("metadata", "fragment"),
    [
        ({"m": {"nested": 1}}, "unsupported type dict"),
        ({"m": [1, [2]]}, "must be a list of str, int, float or bool"),
        ({"m": math.nan}, "is not finite"),
        ({"": 1}, "must be a non-empty str"),
        ({3: 1}, "must be a non-empty str"),
    ],
)
def test_document_rejects_bad_metadata_naming_the_key(metadata: dict[object, object], fragment: str) -> None:
    with pytest.raises(InvalidRequestError, match=fragment) as caught:
        Document("doc-7", "text", metadata)  # type: ignore[arg-type]
    assert "'doc-7'" in str(caught.value)


@pytest.mark.parametrize("bad_id", ["", None, 5])
def test_document_needs_a_string_id(bad_id: object) -> None:
    with pytest.raises(InvalidRequestError, match="document id"):
        Document(bad_id, "text")  # type: ignore[arg-type]


def test_document_embedding_is_a_read_only_float32_copy() -> None:
    source = np.array([1.0, 2.0], dtype=np.float64)
    doc = Document("d", "t", embedding=source)
    assert doc.embedding is not None and doc.embedding.dtype == np.float32
    source[0] = 9.0
    assert doc.embedding[0] == 1.0
    with pytest.raises(ValueError):
        doc.embedding[0] = 3.0
    assert doc.with_score(0.5).score == 0.5 and doc.with_score(0.5).embedding is not None


def test_search_request_defaults_are_spring_ais() -> None:
    request = SearchRequest("q")
    assert (request.top_k, request.similarity_threshold, request.filter) == (4, 0.0, None)


def test_search_request_parses_filter_text_into_a_tree() -> None:
    request = SearchRequest("q", filter="year >= 2020 AND lang == 'en'")
    assert request.filter == (key("year") >= 2020) & (key("lang") == "en")


def test_search_request_filter_syntax_error_points_at_the_column() -> None:
    with pytest.raises(FilterSyntaxError) as caught:
        SearchRequest("q", filter="country == AND year > 1")
    assert caught.value.column == 12
    assert str(caught.value).splitlines()[1:] == ["  country == AND year > 1", "             ^"]


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"query": ""}, "query text must be a non-empty string"),
        ({"query": "   "}, "query text must be a non-empty string"),
        ({"top_k": -1}, "top_k must be an integer >= 0, got -1"),
        ({"top_k": True}, "top_k must be an integer >= 0, got True"),
        ({"top_k": 2.5}, "top_k must be an integer >= 0, got 2.5"),
        ({"similarity_threshold": 1.5}, r"within \[0, 1\], got 1.5"),
        ({"similarity_threshold": -0.1}, r"within \[0, 1\], got -0.1"),
        ({"similarity_threshold": math.nan}, r"within \[0, 1\], got nan"),
    ],
)
def test_search_request_rejects_bad_values(kwargs: dict[str, object], fragment: str) -> None:
    arguments: dict[str, object] = {"query": "q", **kwargs}
    with pytest.raises(InvalidRequestError, match=fragment) as caught:
        SearchRequest(**arguments)  # type: ignore[arg-type]
    assert isinstance(caught.value, ValueError) and isinstance(caught.value, RagError)


def test_threshold_zero_accepts_every_score_and_others_are_inclusive() -> None:
    assert SearchRequest("q").accepts(-0.9)
    request = SearchRequest("q", similarity_threshold=0.5)
    assert request.accepts(0.5) and not request.accepts(0.4999)


def test_replace_validates_again() -> None:
    request = SearchRequest("q", top_k=2)
    assert request.replace(top_k=9).top_k == 9
    with pytest.raises(InvalidRequestError):
        request.replace(top_k=-3)


def test_search_modes_and_fusion_settings_are_validated() -> None:
    request = SearchRequest("q", mode="hybrid", fusion="weighted", vector_weight=0.7, rrf_k=10, diversity=0.3)
    assert (request.mode, request.fusion, request.vector_weight, request.rrf_k, request.diversity) == (
        "hybrid",
        "weighted",
        0.7,
        10,
        0.3,
    )
    assert SearchRequest("q").mode == "vector" and SearchRequest("q").diversity == 0.0
    with pytest.raises(
        InvalidRequestError, match="mode must be one of 'vector', 'lexical', 'hybrid', got 'bm25'"
    ):
        SearchRequest("q", mode="bm25")  # type: ignore[arg-type]
    with pytest.raises(InvalidRequestError, match="fusion must be one of"):
        SearchRequest("q", fusion="max")  # type: ignore[arg-type]
    with pytest.raises(InvalidRequestError, match=r"diversity must be within \[0, 1\], got 2"):
        SearchRequest("q", diversity=2)
    with pytest.raises(InvalidRequestError, match="rrf_k must be an integer >= 1, got 0"):
        SearchRequest("q", rrf_k=0)


class _Text(str):
    """A str subclass: accepted where text is, stored as a plain str."""


def test_search_request_values_keep_their_checks_and_conversions() -> None:
    request = SearchRequest("q", 3, 1, mode=_Text("hybrid"), vector_weight=0, diversity=1, exact=False)  # type: ignore[arg-type]
    assert request.similarity_threshold == 1.0 and type(request.similarity_threshold) is float
    assert type(request.vector_weight) is float and type(request.diversity) is float
    assert type(request.mode) is str and request.mode == "hybrid"
    assert request == SearchRequest("q", 3, 1.0, mode="hybrid", vector_weight=0.0, diversity=1.0)
    assert request.replace(top_k=5) == SearchRequest(
        "q", 5, 1.0, mode="hybrid", vector_weight=0.0, diversity=1.0
    )
    assert repr(SearchRequest("q")).startswith("SearchRequest(query='q', top_k=4, similarity_threshold=0.0")
    refused: list[tuple[dict[str, object], str]] = [
        ({"similarity_threshold": True}, r"similarity_threshold must be within \[0, 1\], got True"),
        ({"vector_weight": math.nan}, r"vector_weight must be within \[0, 1\], got nan"),
        ({"vector_weight": "0.5"}, r"vector_weight must be within \[0, 1\], got '0.5'"),
        ({"diversity": -0.0001}, r"diversity must be within \[0, 1\], got -0.0001"),
        ({"exact": 1}, "exact must be True or False, got 1"),
        ({"mode": None}, "mode must be one of 'vector', 'lexical', 'hybrid', got None"),
        ({"fusion": b"rrf"}, "fusion must be one of 'rrf', 'weighted', got b'rrf'"),
        ({"rrf_k": True}, "rrf_k must be an integer >= 1, got True"),
        ({"rrf_k": 2.0}, "rrf_k must be an integer >= 1, got 2.0"),
        ({"top_k": 3, "rrf_k": 0}, "rrf_k must be an integer >= 1, got 0"),
        ({"filter": 42}, "a filter must be text or a filter tree, got 42"),
    ]
    for kwargs, message in refused:
        with pytest.raises(RagError, match=message):
            SearchRequest("q", **kwargs)
