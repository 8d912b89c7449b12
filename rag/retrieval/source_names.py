"""Sources named the way people see them: `ROOT/PATH` where chunks carry `root` and `source` apart.

A chunk's `source` is its file's path inside the folder it was ingested from (`command/add_test.rst`);
every command names the file by that path after its root's label (`Help/command/add_test.rst`,
`rag.citations.citation`). Filters take either name (`rag.retrieval.source_identity`); these helpers
find the file such a name means where `source` is compared by value, as `rag eval`'s labels are.

Example:
    >>> from rag import Document, HashingEmbedding
    >>> from stores import NumpyVectorStore
    >>> store = NumpyVectorStore(HashingEmbedding())
    >>> store.add([Document("a", "tides", {"root": "docs", "source": "tides.md"})])
    >>> identity_paths(store, {"docs/tides.md", "other/tides.md"})
    {'docs/tides.md': 'tides.md'}
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from rag.filters import key
from rag.vectorstore import VectorStore

__all__ = ["identity_paths", "sources_found"]


def sources_found(store: VectorStore, sources: Iterable[str]) -> dict[str, set[str | None]]:
    """For each of `sources` that some chunk carries, the roots of the chunks carrying it."""
    wanted = sorted(set(sources))
    roots: dict[str, set[str | None]] = defaultdict(set)
    if not wanted:
        return roots
    for document in store.get(filter=key("source").in_(wanted)):
        root = document.metadata.get("root")
        roots[str(document.metadata["source"])].add(None if root is None else str(root))
    return roots


def identity_paths(store: VectorStore, missing: set[str]) -> dict[str, str]:
    """Each label of `missing` that is `ROOT/PATH` of a file in exactly that one root, mapped to PATH."""
    splits = {label: label.split("/", 1) for label in missing if "/" in label}
    roots = sources_found(store, (path for _, path in splits.values()))
    return {label: path for label, (root, path) in splits.items() if roots.get(path) == {root}}
