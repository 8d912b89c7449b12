"""The sources list of `rag ask` and `/sources` in `rag chat`: each source once, with its passages' scores."""

from __future__ import annotations

from collections.abc import Sequence

from rag.citations import cited_sources
from rag.documents import Document

__all__ = ["source_lines"]


def source_lines(
    documents: Sequence[Document], cosine: Sequence[float | None] = (), answer: str | None = None
) -> list[str]:
    """One line per source: passage numbers, source, scores. With the `answer`, the sources it cites
    come first, in the order it cites them; the rest follow in order of first appearance
    (`rag.citations.cited_sources`).

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
    for source in cited_sources(documents, answer):
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
