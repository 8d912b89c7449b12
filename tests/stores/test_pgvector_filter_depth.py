"""pgvector answers every filter the parser accepts, however deep, as the numpy store does: its SQL
compiler walks the tree without recursion."""

from __future__ import annotations

from collections.abc import Callable

from rag import Document, SearchRequest
from rag.embeddings import HashingEmbedding
from rag.filters import MAX_DEPTH, Filter, key, matches
from stores import NumpyVectorStore, PgVectorStore

MODEL = HashingEmbedding(dimensions=32)
DOCUMENTS = [Document(f"d{i}", f"lamp {i}", {"n": i, "tag": "x" if i % 3 else "y"}) for i in range(12)]


def _alternating(levels: int) -> Filter:
    """n == 0 OR (tag == 'x' AND (n == 2 OR (tag == 'x' AND ...))): `levels` AND/OR levels."""
    tree: Filter = key("n") >= 5
    for i in reversed(range(levels)):
        tree = ((key("n") == i % 12) | tree) if i % 2 == 0 else ((key("tag") == "x") & tree)
    return tree


def test_the_deepest_accepted_filter_is_answered_like_numpy(
    postgres_server_url: str, fresh_name: Callable[[str], str]
) -> None:
    numpy_store = NumpyVectorStore(MODEL)
    numpy_store.add(DOCUMENTS)
    with PgVectorStore(MODEL, url=postgres_server_url, table=fresh_name("deep")) as store:
        store.add(DOCUMENTS)
        for levels in (40, MAX_DEPTH):
            tree = _alternating(levels)
            expected = sorted(d.id for d in DOCUMENTS if matches(tree, d.metadata))
            assert sorted(d.id for d in store.get(filter=tree)) == expected
            assert store.count(filter=tree) == numpy_store.count(filter=tree) == len(expected)
            found = store.similarity_search(SearchRequest("lamp", top_k=12, filter=tree))
            assert sorted(d.id for d in found) == expected
