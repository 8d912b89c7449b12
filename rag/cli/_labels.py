"""`rag eval`: check the sources a questions file names against the store before measuring.

A chunk's `source` is its file's path inside the folder it was ingested from (`command/add_test.rst`);
every command names the file by that path after its root's label (`Help/command/add_test.rst`).
Relevance is judged on `source`, so a label copied from a command's output would name no chunk, and
every metric of its question would read 0. So a label that names no chunk but is `ROOT/PATH` for a file
of exactly one root is read as that path, as a filter reads it, and any other label that names no chunk
is reported with the questions it leaves unscorable.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace

from rag.eval import QuestionSet
from rag.retrieval.source_names import identity_paths, sources_found
from rag.vectorstore import VectorStore

__all__ = ["check_labels"]


def check_labels(store: VectorStore, questions: QuestionSet, warn: Callable[[str], None]) -> QuestionSet:
    """`questions` with identity labels (`ROOT/PATH`) read as paths; any other unknown label warned.

    Only a questions file labelled by `source` is checked (a BEIR folder's labels are corpus ids).
    """
    if questions.unit_field != "source":
        return questions
    labels = {label.source for q in questions for label in q.relevant}
    missing = labels - set(sources_found(store, labels))
    if not missing:
        return questions
    paths = identity_paths(store, missing)
    unknown: dict[str, list[str]] = defaultdict(list)
    for question in questions:
        for label in question.relevant:
            if label.source in missing and label.source not in paths:
                unknown[label.source].append(question.id)
    shared = _paths_of_several_roots(store, set(unknown))
    for name, ids in sorted(unknown.items()):
        shown = ", ".join(ids[:5]) + (", ..." if len(ids) > 5 else "")
        if name in shared:
            path, roots = shared[name]
            warn(
                f"label {name!r} (question {shown}) cannot score: roots {', '.join(roots)} all hold "
                f"{path!r} and relevance is judged on the path alone; label it {path!r} (each copy counts)"
            )
            continue
        warn(
            f"no chunk in the store has source {name!r} (question {shown}): it can never be found; "
            "label a file as `rag query` and `rag ask` name it, or by its path inside the folder you ingested"
        )
    if not paths:
        return questions
    rewritten = tuple(
        replace(q, relevant=tuple(replace(r, source=paths.get(r.source, r.source)) for r in q.relevant))
        for q in questions
    )
    return replace(questions, questions=rewritten)


def _paths_of_several_roots(store: VectorStore, labels: set[str]) -> dict[str, tuple[str, list[str]]]:
    """Each `ROOT/PATH` label whose PATH that root and others hold: (PATH, the roots, sorted)."""
    splits = {label: label.split("/", 1) for label in labels if "/" in label}
    found = sources_found(store, (path for _, path in splits.values()))
    return {
        label: (path, sorted(str(r) for r in found[path]))
        for label, (root, path) in splits.items()
        if root in found.get(path, set()) and len(found[path]) > 1
    }
