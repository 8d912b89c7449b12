"""A filter on `source` that names a file the way `rag query` and `rag info` show it, `ROOT/PATH`.

A chunk carries its file's path inside the folder it was ingested from as `source`
(`guide/install.md`) and that folder's label as `root` (`docs`); a file's identity, which `rag query`,
`rag info` and `rag serve`'s search show, is `docs/guide/install.md`. Both names select the file:
`widen_source_names` rewrites every `source == 'A/B'` and `source IN [...]` so that it also matches
the chunks whose `root` and `source` make up that identity (a root's label is a folder's name, so
the name splits at its first `/`):

    source == 'docs/guide/install.md'
    -> source == 'docs/guide/install.md' OR (root == 'docs' AND source == 'guide/install.md')

A chunk's `dirs` lists the folders above its file inside the root (`guide` for `guide/install.md`),
and `dirs CONTAINS 'docs/guide'` names a folder the same way, with the root's label in front: it also
matches `root == 'docs' AND dirs CONTAINS 'guide'`.

A name without `/` is left as it is, and so is every other comparison (`!=`, `NOT IN`,
`NOT CONTAINS`); under `NOT` the widened comparison is negated whole, so
`NOT source == 'docs/guide/install.md'` leaves that file out under either name. The advisors' and
the commands' searches run their filters through it (`rag.retrieval.scope.scoped_filter`).

Example:
    >>> from rag.filters import key
    >>> print(widen_source_names(key("source") == "docs/tides.md"))
    (source == 'docs/tides.md') OR ((root == 'docs') AND (source == 'tides.md'))
    >>> print(widen_source_names(key("dirs").contains("docs/guide")))
    (dirs CONTAINS 'docs/guide') OR ((root == 'docs') AND (dirs CONTAINS 'guide'))
    >>> print(widen_source_names(key("lang") == "en/us"))
    lang == 'en/us'
"""

from __future__ import annotations

from rag.filters import Filter, key
from rag.filters.tree import And, Comparison, Not, Op, Or

__all__ = ["widen_source_names"]


def _by_root(names: tuple[object, ...]) -> dict[str, list[str]]:
    """The paths asked for under each root, for the names that read as `ROOT/PATH` (a root's label is
    a folder's name, so it holds no `/`)."""
    paths: dict[str, list[str]] = {}
    for name in names:
        if isinstance(name, str):
            root, _, path = name.partition("/")
            if root and path:
                paths.setdefault(root, []).append(path)
    return paths


def _any(nodes: list[Filter]) -> Filter:
    """The OR of `nodes` as a balanced tree, so a long list of names nests only logarithmically."""
    if len(nodes) == 1:
        return nodes[0]
    middle = len(nodes) // 2
    return Or(_any(nodes[:middle]), _any(nodes[middle:]))


def _widened(node: Comparison) -> Filter:
    if node.key == "dirs" and node.op is Op.CONTAINS and isinstance(node.value, str):
        root, _, folder = node.value.partition("/")
        return node | ((key("root") == root) & key("dirs").contains(folder)) if root and folder else node
    if node.key != "source" or node.op not in (Op.EQ, Op.IN):
        return node
    names = node.value if isinstance(node.value, tuple) else (node.value,)
    alternatives: list[Filter] = [node]
    for root, paths in _by_root(names).items():
        path: Filter = key("source") == paths[0] if len(paths) == 1 else key("source").in_(paths)
        alternatives.append((key("root") == root) & path)
    return _any(alternatives)


def widen_source_names(node: Filter) -> Filter:
    """`node` with each `source == NAME` / `source IN [...]` also matching `NAME` read as `ROOT/PATH`,
    and each `dirs CONTAINS 'ROOT/FOLDER'` also matching `FOLDER` under that root.

    The tree is rebuilt bottom-up with an explicit stack: a filter may nest thousands of levels deep.
    """
    built: list[Filter] = []
    stack: list[tuple[Filter, bool]] = [(node, False)]
    while stack:
        current, children_done = stack.pop()
        if isinstance(current, And | Or):
            if children_done:
                right, left = built.pop(), built.pop()
                built.append(type(current)(left, right))
            else:
                stack += [(current, True), (current.right, False), (current.left, False)]
        elif isinstance(current, Not):
            if children_done:
                built.append(Not(built.pop()))
            else:
                stack += [(current, True), (current.operand, False)]
        else:
            built.append(_widened(current) if isinstance(current, Comparison) else current)
    return built[0]
