"""Sources named the way people see them: `ROOT/PATH` where chunks carry `root` and `source` apart.

A chunk's `source` is its file's path inside the folder it was ingested from (`command/add_test.rst`);
`rag query`, `rag info` and `rag serve` show the file's identity, that path after its root's label
(`Help/command/add_test.rst`). A filter or a label copied from them names no chunk. These helpers
find the file such a name means, so the CLI and the server can say what to write instead.

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

from rag.filters import Filter, as_filter, key
from rag.filters.tree import And, Comparison, Op, Or
from rag.vectorstore import VectorStore

__all__ = ["identity_paths", "source_filter_hint", "sources_found"]


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


def _source_values(node: Filter) -> list[str]:
    """The values a filter compares `source` with by `==` or `IN`, outside any NOT.

    Walked with an explicit stack, so a filter of any length or depth is read without recursion.
    """
    found: list[str] = []
    stack: list[Filter] = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, And | Or):
            stack += [current.right, current.left]
            continue
        if not isinstance(current, Comparison) or current.key != "source":
            continue
        if current.op == Op.EQ:
            values: tuple[object, ...] = (current.value,)
        elif current.op == Op.IN and isinstance(current.value, tuple):
            values = current.value
        else:
            values = ()
        found += [v for v in values if isinstance(v, str)]
    return found


def source_filter_hint(store: VectorStore, filter: str | Filter | None) -> str | None:
    """What to write instead, when a filter that found nothing compares `source` with `ROOT/PATH`.

    Example: `source == 'Help/command/add_test.rst'` finds nothing, since `source` holds the path
    inside the root; the hint gives `root == 'Help' AND source == 'command/add_test.rst'`.
    """
    tree = as_filter(filter)
    values = [] if tree is None else _source_values(tree)
    paths = identity_paths(store, {v for v in values if "/" in v})
    if not paths:
        return None
    label, path = sorted(paths.items())[0]
    root = label.split("/", 1)[0]
    return (
        f"`source` holds a file's path inside its root, and `root` the root's label: for {label!r} "
        f"filter on \"root == '{root}' AND source == '{path}'\""
    )
