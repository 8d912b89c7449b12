"""The sources list of `rag ask` and `/sources` in `rag chat`: each source once, with its passages' scores."""

from __future__ import annotations

import re
from collections.abc import Sequence

from rag.citations import CitedSource, cited_sources
from rag.documents import Document

__all__ = ["answer_first", "source_lines"]


def _first_use(source: CitedSource, answer: str) -> int | None:
    """Where `answer` first cites `source`: by passage number (`[3]`, `[1, 3]`) or by name
    (`[guide/install.md]`, as the extractive answerer quotes); None if it never does."""
    places = [
        m.start()
        for m in re.finditer(r"\[\s*(\d+(?:\s*,\s*\d+)*)\s*\]", answer)
        if set(source.numbers) & {int(n) for n in m.group(1).split(",")}
    ]
    at = answer.find(f"[{source.citation}")
    if at >= 0:
        places.append(at)
    return min(places) if places else None


def answer_first(sources: list[CitedSource], answer: str | None) -> list[CitedSource]:
    """`sources` with those the answer cites first, in the order it cites them; then the others in
    retrieval order.

    Example:
        >>> a, b = CitedSource("a.md", (1,)), CitedSource("b.md", (2,))
        >>> [s.citation for s in answer_first([a, b], "- Mount it. [b.md]")]
        ['b.md', 'a.md']
    """
    if not answer:
        return sources
    used = {id(s): place for s in sources if (place := _first_use(s, answer)) is not None}
    return sorted(sources, key=lambda s: (id(s) not in used, used.get(id(s), 0)))


def source_lines(
    documents: Sequence[Document], cosine: Sequence[float | None] = (), answer: str | None = None
) -> list[str]:
    """One line per source: passage numbers, source, scores. With the `answer`, the sources it cites
    come first, in the order it cites them (`answer_first`); the rest follow in order of first
    appearance.

    Several passages of one file share a line (`[1, 3] quick-start.html, chunks 0, 2`), their scores
    listed in the same order (`score 0.978 / 0.899`), so a file is never named twice.

    Example:
        >>> docs = [Document("a", "x", {"source": "run.md", "chunk_index": 0}, score=0.9),
        ...         Document("b", "y", {"source": "faq.md"}, score=0.8),
        ...         Document("c", "z", {"source": "run.md", "chunk_index": 4}, score=0.5)]
        >>> for line in source_lines(docs, [0.41, None, 0.3]):
        ...     print(line)
          [1, 3] run.md, chunks 0, 4 (score 0.900 / 0.500, cosine 0.410 / 0.300)
          [2] faq.md (score 0.800)
    """
    similarity = list(cosine) + [None] * (len(documents) - len(cosine))
    lines = []
    for source in answer_first(cited_sources(documents), answer):
        numbers = []
        for name, values in (
            ("score", [documents[n - 1].score for n in source.numbers]),
            ("cosine", [similarity[n - 1] for n in source.numbers]),
        ):
            shown = [f"{v:.3f}" for v in values if v is not None]
            if shown:
                numbers.append(f"{name} {' / '.join(shown)}")
        lines.append(f"  {source.line()}" + (f" ({', '.join(numbers)})" if numbers else ""))
    return lines
