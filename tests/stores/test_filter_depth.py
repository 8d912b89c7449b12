"""Every filter is answered by every store, however deep or wide: the same answer or the same clean error.

Before, embedded Chroma refused nested filters from about 32 levels (`Invalid where clause`) and flat ones
of about 1,000 clauses (SQLite's expression depth), and trees built in Python raised `RecursionError` at
300 levels (Chroma) and 600 (numpy). Each shape below is run at depths 1 .. 5,000 on numpy and embedded
Chroma and compared with the reference evaluator, for `count`, `get` and `similarity_search`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from rag import Document, SearchRequest
from rag.embeddings import HashingEmbedding
from rag.errors import FilterError, RagError
from rag.filters import Filter, Not, key, matches, parse
from rag.vectorstore import VectorStore
from stores import ChromaVectorStore, NumpyVectorStore
from stores.chroma.filters import MAX_COST, MAX_LEVELS, bounded, compile_filter

MODEL = HashingEmbedding(dimensions=32)
DOCUMENTS = [
    Document(
        f"d{i}", f"lamp {i}", {"n": i, "lang": "en" if i % 2 else "fr", **({"tag": "x"} if i % 3 else {})}
    )
    for i in range(12)
]
DEPTHS = [1, 2, 5, 16, 31, 32, 35, 36, 64, 299, 300, 600, 601, 1000, 1001, 5000]


def _right_and(levels: int) -> Filter:
    tree: Filter = key("n") >= 2
    for i in range(levels):
        tree = (key("n") != 100 + i) & tree
    return tree


def _left_or(levels: int) -> Filter:
    tree: Filter = key("n") == 1
    for i in range(levels):
        tree = tree | (key("n") == 3 + (i % 4))
    return tree


def _nots(levels: int) -> Filter:
    tree: Filter = key("lang") == "en"
    for _ in range(levels):
        tree = Not(tree)
    return tree


def _alternating(levels: int) -> Filter:
    """n == 0 OR (tag == 'x' AND (n == 2 OR (tag == 'x' AND ...(lang == 'en')))): `levels` AND/OR levels."""
    tree: Filter = key("lang") == "en"
    for i in reversed(range(levels)):
        tree = ((key("n") == i % 12) | tree) if i % 2 == 0 else ((key("tag") == "x") & tree)
    return tree


def _mixed(levels: int) -> Filter:
    """Alternating levels, each an AND of a NOT and a string ordering that Chroma cannot evaluate."""
    tree: Filter = key("n") < 9
    for i in range(levels):
        item = ~(key("n") == i % 12) if i % 2 else (key("lang") >= "f")
        tree = (item | tree) if i % 2 else (item & tree)
    return tree


SHAPES: dict[str, Callable[[int], Filter]] = {
    "right_and": _right_and,
    "left_or": _left_or,
    "nots": _nots,
    "alternating": _alternating,
    "mixed": _mixed,
}


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, VectorStore]]:
    numpy_store = NumpyVectorStore(MODEL)
    chroma = ChromaVectorStore(MODEL, path=tmp_path_factory.mktemp("chroma"))
    for store in (numpy_store, chroma):
        store.add(DOCUMENTS)
    yield {"numpy": numpy_store, "chroma": chroma}
    chroma.close()


def _answers(store: VectorStore, tree: Filter) -> tuple[object, ...]:
    """count, get, vector and hybrid search under `tree`, or the error's type and message."""
    try:
        return (
            store.count(tree),
            [d.id for d in store.get(filter=tree)],
            sorted(d.id for d in store.similarity_search(SearchRequest("lamp", top_k=12, filter=tree))),
            [d.id for d in store.similarity_search(SearchRequest("lamp 7", top_k=3, filter=tree))],
            [
                d.id
                for d in store.similarity_search(SearchRequest("lamp 7", top_k=3, filter=tree, mode="hybrid"))
            ],
        )
    except RagError as exc:
        return (type(exc).__name__, str(exc))


@pytest.mark.parametrize("levels", DEPTHS)
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_same_answer_or_same_clean_error_at_every_depth(
    stores: dict[str, VectorStore], shape: str, levels: int
) -> None:
    tree = SHAPES[shape](levels)
    numpy_answer = _answers(stores["numpy"], tree)
    chroma_answer = _answers(stores["chroma"], tree)
    assert chroma_answer == numpy_answer
    try:
        expected = sorted((d.id for d in DOCUMENTS if matches(tree, d.metadata)), key=lambda i: int(i[1:]))
    except FilterError as exc:
        # Only alternations count as depth; the message says how deep and what the limit is.
        assert shape in ("alternating", "mixed") and levels > 1000
        assert numpy_answer == ("FilterError", str(exc))
        assert f"filter nests {levels} levels of AND/OR deep; the limit is 1000" in str(exc)
        return
    assert numpy_answer[0] == len(expected)
    got = numpy_answer[1]
    assert isinstance(got, list)
    assert sorted(got, key=lambda i: int(i[1:])) == expected
    assert numpy_answer[2] == sorted(expected)


@pytest.mark.parametrize("width", [2, 500, 900, 2_000])
@pytest.mark.parametrize("operator", ["AND", "OR"])
def test_wide_filters_from_text(stores: dict[str, VectorStore], width: int, operator: str) -> None:
    if operator == "AND":
        text = " AND ".join(f"n != {100 + i}" for i in range(width)) + " AND lang == 'en'"
    else:
        text = " OR ".join(f"n == {100 + i}" for i in range(width)) + " OR lang == 'en'"
    tree = parse(text)
    expected = [d.id for d in DOCUMENTS if d.metadata["lang"] == "en"]
    for store in stores.values():
        assert _answers(store, tree)[:3] == (len(expected), sorted(expected), sorted(expected))


def test_delete_with_a_deep_filter(tmp_path: Path) -> None:
    for store in (NumpyVectorStore(MODEL), ChromaVectorStore(MODEL, path=tmp_path / "c")):
        store.add(DOCUMENTS)
        assert store.delete(filter=_alternating(600)) == sum(
            matches(_alternating(600), d.metadata) for d in DOCUMENTS
        )
        assert store.count() == sum(not matches(_alternating(600), d.metadata) for d in DOCUMENTS)
        with pytest.raises(FilterError, match="the limit is 1000"):
            store.delete(filter=_alternating(3000))
        assert store.count() > 0  # nothing lost by the refused delete


def _balanced(leaves: Sequence[Filter], conjunction: bool) -> Filter:
    """The items joined pairwise, level by level: a tree only log2(n) deep that still flattens to n."""
    items = list(leaves)
    while len(items) > 1:
        pairs = [(a & b) if conjunction else (a | b) for a, b in zip(items[::2], items[1::2], strict=False)]
        items = pairs + ([items[-1]] if len(items) % 2 else [])
    return items[0]


@pytest.mark.parametrize("width", [1_000, 1_200])
def test_wide_shallow_trees_beyond_chromas_expression_depth(
    stores: dict[str, VectorStore], width: int
) -> None:
    every_other = _balanced([key("n") != 100 + i for i in range(width)] + [key("lang") == "en"], True)
    one_of = _balanced([key("n") == 100 + i for i in range(width)] + [key("lang") == "en"], False)
    expected = sorted(d.id for d in DOCUMENTS if d.metadata["lang"] == "en")
    for tree in (every_other, one_of):
        for store in stores.values():
            assert _answers(store, tree)[:3] == (len(expected), sorted(expected), expected)


def _shape(where: Any) -> tuple[int, int]:
    """(nesting, cost) of a Chroma clause: cost sums the widths of the lists along the worst path."""
    if not isinstance(where, dict) or len(where) != 1 or next(iter(where)) not in ("$and", "$or"):
        return 0, 1
    clauses = next(iter(where.values()))
    inner = [_shape(c) for c in clauses]
    return 1 + max(n for n, _ in inner), len(clauses) + max(c for _, c in inner)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_clauses_sent_to_chroma_stay_within_its_limits(shape: str) -> None:
    for levels in (1, 40, 800):
        compiled = compile_filter(SHAPES[shape](levels))
        nesting, cost = _shape(compiled.where)
        assert nesting <= MAX_LEVELS + 2 and cost <= MAX_COST + 2 * MAX_LEVELS
        # The Python check decides by the whole filter (Chroma's clause only preselects).
        tree = SHAPES[shape](levels)
        assert [compiled.accepts(d.metadata) for d in DOCUMENTS] == [
            matches(tree, d.metadata) for d in DOCUMENTS
        ]
    small = compile_filter(parse("n == 1 OR (lang == 'en' AND n != 3)"))
    encoded = [{"_rag_enc": {"$contains": '"n"'}}, {"_rag_enc": {"$contains": '"lang"'}}]
    assert small.where == {
        "$or": [
            {"n": {"$eq": 1}},
            encoded[0],
            {"$and": [{"$or": [{"lang": {"$eq": "en"}}, encoded[1]]}, {"n": {"$ne": 3}}]},
        ]
    }


def test_bounded_only_widens() -> None:
    wide_and = {"$and": [{"n": {"$ne": float(i)}} for i in range(1_000)]}
    trimmed = bounded(wide_and, 100)
    assert trimmed is not None and trimmed["$and"] == wide_and["$and"][:50]
    wide_or = {"$or": [{"n": {"$eq": float(i)}} for i in range(1_000)]}
    assert bounded(wide_or, 100) is None
    assert bounded(wide_or, 2_000) == wide_or
    nested = {"$and": [{"a": {"$eq": 1.0}}, wide_or]}
    assert bounded(nested, 100) == {"a": {"$eq": 1.0}}
