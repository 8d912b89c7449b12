"""Data for the store conformance suite: a counting embedder, vectors with chosen cosines, documents,
filter cases and the helpers the suite shares. Plain Python and numpy: importable without pytest or
hypothesis."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from rag.documents import Document
from rag.embeddings import EmbeddingModel
from rag.filters import Filter, key
from rag.vectorstore import VectorStore
from stores.lexical.index import LexicalIndex

__all__ = [
    "FILTER_CASES",
    "LEXICAL_QUERY",
    "CountingEmbedding",
    "Reopen",
    "filter_documents",
    "lexical_documents",
]

Reopen = Callable[[VectorStore, EmbeddingModel], VectorStore]
"""A store's `reopen` fixture: open the same stored data again with the given embedding model."""

DIMENSIONS = 64
COSINES = {"p": 0.9, "q": 0.6, "r": 0.3, "s": 0.0, "t": -0.5}
KEPT: dict[str, Any] = {"source": "Zürich/東京.md", "page": 3, "ratio": 0.25, "ok": True, "tags": ["a", "ä"]}
WRITTEN: dict[str, Any] = {**KEPT, "gone": None}  # a None value is a missing key
_ONES = np.ones(DIMENSIONS - 1, np.float32)
_SIZES = "{0}.*{1}|{1}.*{0}"  # a message naming both sizes
BAD_VECTORS = {  # each with what its message must say
    "too-short": (_ONES, _SIZES.format(DIMENSIONS - 1, DIMENSIONS)),
    "too-long": (np.ones(DIMENSIONS + 7, np.float32), _SIZES.format(DIMENSIONS + 7, DIMENSIONS)),
    "nan": (np.full(DIMENSIONS, np.nan, np.float32), "NaN|finite"),
    "inf": (np.append(_ONES, np.float32(np.inf)), "inf|finite"),
    "minus-inf": (np.append(_ONES, np.float32(-np.inf)), "inf|finite"),
}
BAD_GETS = {  # arguments of `get` and the one message each gives
    "negative": ({"limit": -1}, "limit must be an integer >= 0 or None, got -1"),
    "bool": ({"limit": True}, "limit must be an integer >= 0 or None, got True"),
    "float": ({"limit": 1.5}, "limit must be an integer >= 0 or None, got 1.5"),
    "one-string": ({"ids": "d1"}, "ids must be a list of ids, not the single string 'd1'"),
    "not-a-string": ({"ids": ["d1", 7]}, "ids must be strings, got 7"),
}


class CountingEmbedding:
    """Wraps an embedding model and records every text it embeds (optionally under another name).

    Example:
        >>> from rag import HashingEmbedding
        >>> model = CountingEmbedding(HashingEmbedding(dimensions=8), name="other")
        >>> _ = model.embed(["a", "b"])
        >>> model.name, model.texts
        ('other', ['a', 'b'])
    """

    __test__ = False

    def __init__(self, inner: EmbeddingModel, *, name: str | None = None) -> None:
        self.inner = inner
        self.name = inner.name if name is None else name
        self.texts: list[str] = []
        self.batches: list[list[str]] = []

    @property
    def dimensions(self) -> int:
        return self.inner.dimensions

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.batches.append(list(texts))
        self.texts.extend(texts)
        return self.inner.embed(texts)


def vector_with_cosine(
    query: npt.NDArray[np.float32], cosine: float, seed: int = 0
) -> npt.NDArray[np.float32]:
    """A unit vector whose cosine with the unit vector `query` is `cosine`."""
    other = np.random.default_rng(seed).standard_normal(len(query))
    other -= other.dot(query) * query
    other /= np.linalg.norm(other)
    vector = cosine * query.astype(np.float64) + np.sqrt(max(0.0, 1.0 - cosine**2)) * other
    result: npt.NDArray[np.float32] = vector.astype(np.float32)
    return result


def query_vector(model: EmbeddingModel, text: str) -> npt.NDArray[np.float32]:
    """`model`'s unit vector for `text`."""
    vector = np.asarray(model.embed([text])[0], dtype=np.float32)
    return vector / np.float32(np.linalg.norm(vector))


def add_with_cosines(store: VectorStore, rows: dict[str, tuple[float, str]], query: str) -> None:
    """Add documents (id: (cosine with `query`, text)); the n-th has metadata {"n": n}."""
    q = query_vector(store.embedding, query)
    store.add(
        Document(doc_id, text, {"n": n}, embedding=vector_with_cosine(q, cosine, seed=n))
        for n, (doc_id, (cosine, text)) in enumerate(rows.items())
    )


def ids(documents: Sequence[Document]) -> list[str]:
    """The ids of `documents`, in order."""
    return [d.id for d in documents]


def lexical_reference(documents: Sequence[Document]) -> LexicalIndex:
    """A fresh `LexicalIndex` over `documents`: the BM25 answers a store's lexical search must give."""
    index = LexicalIndex()
    index.add(ids(documents), [d.text for d in documents], [d.metadata for d in documents])
    return index


# Texts for the lexical tests: term frequencies, lengths, accents and scripts without spaces vary.
LEXICAL_QUERY = "sparse retrieval"
LEXICAL_TEXTS: dict[str, str] = {
    "l1": "Sparse retrieval ranks documents by term statistics.",
    "l2": "Sparse, sparse, sparse: BM25 is the classic sparse retrieval model.",
    "l3": "Dense retrieval embeds queries and documents as vectors.",
    "l4": "Hybrid search fuses sparse and dense rankings of the same documents for better recall.",
    "l5": "Chroma keeps vectors on disk.",
    "l6": "Café crème à Zürich.",
    "l7": "東京タワーの夜景",
}
_LEXICAL_KINDS = {"l1": "sparse", "l2": "sparse", "l3": "dense", "l4": "hybrid"}


def lexical_documents() -> list[Document]:
    """LEXICAL_TEXTS as documents with metadata `kind` (where it applies) and `n` (their number)."""
    kinds = {i: {"kind": kind} for i, kind in _LEXICAL_KINDS.items()}
    return [Document(i, text, {**kinds.get(i, {}), "n": int(i[1:])}) for i, text in LEXICAL_TEXTS.items()]


# Cosines with "alpha beta" and texts chosen so that the cosine order and the BM25 order differ.
SCORED = {
    "p": (0.9, "alpha"),
    "q": (0.6, "alpha beta alpha beta"),
    "r": (0.3, "beta beta beta alpha gamma"),
    "s": (0.1, "alpha alpha alpha alpha alpha"),
    "t": (0.8, "gamma delta"),
    "u": (-0.4, "beta"),
}
# A title and heading path that a chunk's own text does not repeat, one it does, and none at all.
TITLED = [
    Document(
        "sec", "Declare the type of the path parameter.", {"title": "Guide", "headings": ["Validators"]}
    ),
    Document("rec", "Aspirin\n\nReduces fever in guides.", {"title": "Aspirin", "n": 1}),
    Document("bare", "A guide to path parameters and fever.", {"n": 2}),
]
LANGUAGES = [
    Document("de", "Die Häuser am Fluss", {"lang": "de"}),
    Document("en", "The houses by the river", {"lang": "en"}),
    Document("ru", "Дома у реки", {"lang": "ru"}),
    Document("doc", "Release notes", {"title": "Houses", "source": "guide/river-house.md"}),
]


# Documents for the filter cases. Each tests a rule of docs/filters.md: int vs float, bool vs number,
# case and trailing spaces, lists vs scalars, None dropped (d6's country), missing keys (d5 has none).
FILTER_DOCUMENTS: dict[str, dict[str, Any]] = {
    "d1": {
        "year": 2020,
        "country": "BG",
        "tags": ["news", "tech"],
        "draft": False,
        "rating": 4.5,
        "file name": "a b.txt",
        "meta.lang": "en",
    },
    "d2": {"year": 2020.0, "country": "NL", "tags": ["tech"], "draft": True, "rating": 3, "meta.lang": "nl"},
    "d3": {"year": 2021, "country": "bg", "tags": [1, 2], "draft": 1, "rating": -1.5, "名前": "東京"},
    "d4": {"year": "2020", "country": "Ω", "tags": "news", "draft": "false", "file name": "ä"},
    "d5": {},
    "d6": {"year": 1999, "country": None, "tags": [True, 2.5], "draft": False, "rating": 0},
    "d7": {"year": True, "country": "BG ", "tags": ["Tech", "news"], "rating": 10**15},
}


def filter_documents(dimensions: int) -> list[Document]:
    """FILTER_DOCUMENTS as documents with fixed random unit embeddings (no embedding calls needed)."""
    vectors = np.random.default_rng(7).standard_normal((len(FILTER_DOCUMENTS), dimensions)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return [
        Document(i, f"document {i}", metadata, embedding=vector)
        for (i, metadata), vector in zip(FILTER_DOCUMENTS.items(), vectors, strict=True)
    ]


FilterCase = tuple[str, Filter, list[str]]
_ALL = sorted(FILTER_DOCUMENTS)


def _but(*ids: str) -> list[str]:
    return [i for i in _ALL if i not in ids]


FILTER_CASES: list[FilterCase] = [
    # == and != : numbers by value across int/float, booleans apart from numbers, strings exact.
    ("eq int matches float", key("year") == 2020, ["d1", "d2"]),
    ("eq float matches int", key("year") == 2020.0, ["d1", "d2"]),
    ("eq string is not a number", key("year") == "2020", ["d4"]),
    ("eq true is not 1", key("year") == True, ["d7"]),  # noqa: E712 - builds a filter
    ("eq 1 is not true", key("year") == 1, []),
    ("eq false", key("draft") == False, ["d1", "d6"]),  # noqa: E712
    ("eq 0 is not false", key("draft") == 0, []),
    ("eq 1 on int", key("draft") == 1, ["d3"]),
    ("eq case sensitive", key("country") == "BG", ["d1"]),
    ("eq big int", key("rating") == 10**15, ["d7"]),
    ("eq unicode key and value", key("名前") == "東京", ["d3"]),
    ("eq quoted key", key("file name") == "a b.txt", ["d1"]),
    ("eq dotted key", key("meta.lang") == "en", ["d1"]),
    ("eq on list is false", key("tags") == "tech", []),
    ("ne missing is true", key("year") != 2020, _but("d1", "d2")),
    ("ne none is missing", key("country") != "BG", _but("d1")),
    ("ne bool vs number", key("draft") != 1, _but("d3")),
    # ordering: numbers with numbers, strings with strings (code points), otherwise false.
    ("lt number", key("year") < 2021, ["d1", "d2", "d6"]),
    ("le number", key("year") <= 2021, ["d1", "d2", "d3", "d6"]),
    ("gt number", key("year") > 2020, ["d3"]),
    ("ge float bound", key("year") >= 2020.0, ["d1", "d2", "d3"]),
    ("gt zero", key("rating") > 0, ["d1", "d2", "d7"]),
    ("ge zero", key("rating") >= 0, ["d1", "d2", "d6", "d7"]),
    ("lt negative", key("rating") < -1, ["d3"]),
    ("lt string code points", key("country") < "a", ["d1", "d2", "d7"]),
    ("ge string code points", key("country") >= "bg", ["d3", "d4"]),
    ("gt string prefix", key("country") > "BG", ["d2", "d3", "d4", "d7"]),
    ("lt string vs number", key("year") < "2021", ["d4"]),
    ("lt bool never orders", key("year") < True, []),
    ("le unicode", key("file name") <= "ä", ["d1", "d4"]),
    # IN / NOT IN, including mixed types and the builder's empty lists.
    ("in numbers", key("year").in_([2020, 1999.0]), ["d1", "d2", "d6"]),
    ("in mixed types", key("year").in_([True, "2020", 2021.0]), ["d3", "d4", "d7"]),
    ("in strings", key("country").in_(["BG", "bg"]), ["d1", "d3"]),
    ("in bool", key("draft").in_([False]), ["d1", "d6"]),
    ("in empty matches nothing", key("year").in_([]), []),
    ("nin strings", key("country").not_in(["BG", "NL"]), _but("d1", "d2")),
    ("nin mixed", key("draft").not_in([True, 1]), _but("d2", "d3")),
    ("nin empty matches everything", key("year").not_in([]), _ALL),
    # CONTAINS: only list values, items compared like ==.
    ("contains string", key("tags").contains("tech"), ["d1", "d2"]),
    ("contains skips scalars", key("tags").contains("news"), ["d1", "d7"]),
    ("contains int", key("tags").contains(2), ["d3"]),
    ("contains float equals int", key("tags").contains(2.0), ["d3"]),
    ("contains 1 is not true", key("tags").contains(1), ["d3"]),
    ("contains true", key("tags").contains(True), ["d6"]),
    ("contains float", key("tags").contains(2.5), ["d6"]),
    ("not contains", key("tags").not_contains("tech"), _but("d1", "d2")),
    # IS [NOT] NULL: None values count as missing.
    ("is null", key("country").is_null(), ["d5", "d6"]),
    ("is not null", key("country").is_not_null(), _but("d5", "d6")),
    ("is null rating", key("rating").is_null(), ["d4", "d5"]),
    ("unknown key eq", key("nokey") == 1, []),
    ("unknown key ne", key("nokey") != 1, _ALL),
    ("unknown key is null", key("nokey").is_null(), _ALL),
    ("unknown key not contains", key("nokey").not_contains("x"), _ALL),
    # NOT negates each comparison (docs/filters.md), AND / OR combine.
    ("not lt is ge", ~(key("year") < 2021), ["d3"]),
    ("not eq is ne", ~(key("year") == 2020), _but("d1", "d2")),
    ("not is null", ~key("country").is_null(), _but("d5", "d6")),
    ("not contains via not", ~key("tags").contains("tech"), _but("d1", "d2")),
    ("not in via not", ~key("country").in_(["BG"]), _but("d1")),
    ("de morgan and", ~((key("year") == 2020) & (key("country") == "BG")), _but("d1")),
    ("de morgan or", ~((key("year") < 2021) | (key("rating") < 0)), []),
    ("double not", ~~(key("year") < 2021), ["d1", "d2", "d6"]),
    ("and", (key("year") >= 2020) & (key("draft") == False), ["d1"]),  # noqa: E712
    ("or", (key("country") == "NL") | (key("rating") < 0), ["d2", "d3"]),
    ("nested", ((key("year") == 2020) | key("tags").contains(True)) & ~(key("draft") == True), ["d1", "d6"]),  # noqa: E712
]
