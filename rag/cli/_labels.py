"""`rag eval`: check the sources a questions file names against the store before measuring.

A chunk's `source` is its file's path inside the folder it was ingested from (`command/add_test.rst`);
`rag query` and `rag info` show the file's identity, that path after its root's label
(`Help/command/add_test.rst`). A label copied from them names no chunk, and every metric of its
question would read 0 with nothing said. So a label that names no chunk but is `ROOT/PATH` for a
file of exactly one root is read as that path (said on stderr), and any other label that names no
chunk is reported with the questions it leaves unscorable.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import replace

from rag.eval import QuestionSet
from rag.filters import Filter, as_filter, key
from rag.filters.tree import And, Comparison, Not, Op, Or
from rag.vectorstore import VectorStore

__all__ = ["check_labels", "source_filter_hint"]


def _found(store: VectorStore, sources: Iterable[str]) -> dict[str, set[str | None]]:
    """For each of `sources` that some chunk carries, the roots of the chunks carrying it."""
    wanted = sorted(set(sources))
    roots: dict[str, set[str | None]] = defaultdict(set)
    if not wanted:
        return roots
    for document in store.get(filter=key("source").in_(wanted)):
        root = document.metadata.get("root")
        roots[str(document.metadata["source"])].add(None if root is None else str(root))
    return roots


def _as_paths(store: VectorStore, missing: set[str]) -> dict[str, str]:
    """Each label of `missing` that is `ROOT/PATH` of a file in exactly that one root, mapped to PATH."""
    splits = {label: label.split("/", 1) for label in missing if "/" in label}
    roots = _found(store, (path for _, path in splits.values()))
    return {label: path for label, (root, path) in splits.items() if roots.get(path) == {root}}


def check_labels(store: VectorStore, questions: QuestionSet, warn: Callable[[str], None]) -> QuestionSet:
    """`questions` with identity labels (`ROOT/PATH`) read as paths; every other unknown label warned.

    Only a questions file labelled by `source` is checked (a BEIR folder's labels are corpus ids).
    """
    if questions.unit_field != "source":
        return questions
    labels = {label.source for q in questions for label in q.relevant}
    missing = labels - set(_found(store, labels))
    if not missing:
        return questions
    paths = _as_paths(store, missing)
    for name, path in sorted(paths.items()):
        warn(f"label {name!r} read as source {path!r} (root {name.split('/', 1)[0]!r})")
    unknown: dict[str, list[str]] = defaultdict(list)
    for question in questions:
        for label in question.relevant:
            if label.source in missing and label.source not in paths:
                unknown[label.source].append(question.id)
    for name, ids in sorted(unknown.items()):
        shown = ", ".join(ids[:5]) + (", ..." if len(ids) > 5 else "")
        warn(
            f"no chunk in the store has source {name!r} (question {shown}): it can never be found; "
            "label a file by its path inside the folder you ingested, as `rag ask` lists sources"
        )
    if not paths:
        return questions
    rewritten = tuple(
        replace(q, relevant=tuple(replace(r, source=paths.get(r.source, r.source)) for r in q.relevant))
        for q in questions
    )
    return replace(questions, questions=rewritten)


def _source_values(node: Filter) -> list[str]:
    """The values a filter compares `source` with by `==` or `IN`, outside any NOT."""
    if isinstance(node, And | Or):
        return _source_values(node.left) + _source_values(node.right)
    if isinstance(node, Not) or not isinstance(node, Comparison) or node.key != "source":
        return []
    if node.op == Op.EQ:
        values: tuple[object, ...] = (node.value,)
    elif node.op == Op.IN and isinstance(node.value, tuple):
        values = node.value
    else:
        values = ()
    return [v for v in values if isinstance(v, str)]


def source_filter_hint(store: VectorStore, filter: str | Filter | None) -> str | None:
    """What to write instead, when a filter that found nothing compares `source` with `ROOT/PATH`.

    Example: `source == 'Help/command/add_test.rst'` finds nothing, since `source` holds the path
    inside the root; the hint gives `root == 'Help' AND source == 'command/add_test.rst'`.
    """
    tree = as_filter(filter)
    values = [] if tree is None else _source_values(tree)
    paths = _as_paths(store, {v for v in values if "/" in v})
    if not paths:
        return None
    label, path = sorted(paths.items())[0]
    root = label.split("/", 1)[0]
    return (
        f"`source` holds a file's path inside its root, and `root` the root's label: for {label!r} "
        f"filter on \"root == '{root}' AND source == '{path}'\""
    )
