"""Answer metrics: a generated answer against the gold one, and against the passages it was built from.

Text metrics use SQuAD's normalisation (lower case, punctuation and the articles a/an/the removed,
whitespace collapsed):

- `answer_contains`: 1 when the normalised gold answer occurs, as whole words, in the normalised answer;
  a gold answer of several parts separated by "; " (`"03:15; 14 most recent"`) needs each part.
- `answer_f1`: SQuAD's token F1: the tokens both share (with multiplicity) give precision over the
  answer's tokens and recall over the gold's; F1 is their harmonic mean (0 when nothing is shared).

Grounding checks read the answer's citations and quotations:

- `cited_answer`: 1 when a passage the answer cites holds the gold answer (each part in some cited
  passage). Citations are `[n]` (the n-th retrieved passage, as the QuestionAnswerAdvisor's template
  numbers them) or `[source]` / `[source, page P]` (as the extractive answerer writes them); 0 when the
  answer cites nothing. A passage is cited by name as every answer names it (`docs/guide.md`,
  `rag.citations.citation`) or by its `source` alone (`guide.md`); `cites_source` tells whether an
  answer cites a given file (a questions file's gold page), under either name.
- `quotes_grounded`: 1 when every quoted sentence (text between double quotes, or the extractive
  answerer's `- sentence [source]` lines) occurs in some retrieved passage; None when nothing is quoted.

Example:
    >>> round(token_f1("The beacon is lit at dusk.", "at dusk"), 3)
    0.571
    >>> answer_contains("It is lit at Dusk!", "at dusk")
    1.0
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence

from rag.citations import citation, source_name
from rag.documents import Document

__all__ = [
    "ANSWER_METRICS",
    "answer_contains",
    "citations",
    "cited_answer",
    "cites_source",
    "normalize_answer",
    "quotations",
    "quotes_grounded",
    "score_answer",
    "token_f1",
]

ANSWER_METRICS = ("answer_contains", "answer_f1", "cited_answer", "quotes_grounded")
"""The answer metrics, in table order (the judge's `faithfulness` and `relevance` follow when used)."""

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = frozenset(string.punctuation)
_CITATION = re.compile(r"\[([^\[\]\n]{1,200})\]")
_QUOTED = re.compile(r"[\"“]([^\"“”\n]+)[\"”]")
_EXTRACTIVE_LINE = re.compile(r"^\s*-\s+(.+?)\s*\[[^\[\]\n]+\]\s*$", re.MULTILINE)
_PAGE = re.compile(r"^(.*?),\s*page\s*(\S+)$", re.IGNORECASE)
_MIN_QUOTE_WORDS = 3  # shorter quoted text is a term or a name, not a sentence to check


def normalize_answer(text: str) -> str:
    """SQuAD's normalisation: lower case, no punctuation, no articles, single spaces.

    Example:
        >>> normalize_answer("The  Rust toolchain, v1.74!")
        'rust toolchain v174'
    """
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def _parts(gold: str) -> list[str]:
    """The normalised parts of a gold answer: several facts are written separated by "; "."""
    return [part for part in (normalize_answer(p) for p in gold.split("; ")) if part]


def _holds(texts: Sequence[str], gold: str) -> float:
    """1.0 when every part of `gold` occurs as whole words in one of `texts` (normalised), else 0.0."""
    parts, haystacks = _parts(gold), [f" {normalize_answer(text)} " for text in texts]
    if not parts:
        return 0.0
    return 1.0 if all(any(f" {part} " in text for text in haystacks) for part in parts) else 0.0


def answer_contains(answer: str, gold: str) -> float:
    """1.0 when the normalised `gold` occurs as whole words in the normalised `answer`, else 0.0. A gold
    answer of several parts separated by "; " is contained when each part is.

    Example:
        >>> answer_contains("Backups run at 03:15 and keep the 14 most recent.", "03:15; 14 most recent")
        1.0
    """
    return _holds([answer], gold)


def token_f1(answer: str, gold: str) -> float:
    """SQuAD's token F1 between `answer` and `gold` (both normalised)."""
    predicted, expected = normalize_answer(answer).split(), normalize_answer(gold).split()
    if not predicted or not expected:
        return float(predicted == expected)
    shared = sum((Counter(predicted) & Counter(expected)).values())
    if shared == 0:
        return 0.0
    precision, recall = shared / len(predicted), shared / len(expected)
    return 2 * precision * recall / (precision + recall)


def _matches(label: str, document: Document) -> bool:
    """Whether `label` names `document`: by its citation (`docs/guide.md`, `corpus.jsonl#7`) or its
    `source` (`guide.md`), with its page where the label gives one."""
    names = {citation(document) or document.id, str(document.metadata.get("source", document.id))}
    found = _PAGE.match(label)
    if found is not None:
        page = document.metadata.get("page")
        return found.group(1).strip() in names and str(page) == found.group(2).strip()
    return label in names


def citations(answer: str, documents: Sequence[Document]) -> list[Document]:
    """The retrieved documents the answer cites, by number (`[2]`) or by source (`[guide.md, page 3]`)."""
    cited: dict[str, Document] = {}
    for match in _CITATION.finditer(answer):
        for label in (part.strip() for part in match.group(1).split(";")):
            if label.isdigit():
                if 1 <= int(label) <= len(documents):
                    cited.setdefault(documents[int(label) - 1].id, documents[int(label) - 1])
                continue
            for document in documents:
                if _matches(label, document):
                    cited.setdefault(document.id, document)
    return list(cited.values())


def cites_source(answer: str, documents: Sequence[Document], name: str) -> bool:
    """Whether the answer cites a passage of the file `name`, given as its `source` (`guide/install.md`)
    or as the name answers cite it (`docs/guide/install.md`).

    Example:
        >>> doc = Document("c1", "Run make.", {"root": "docs", "source": "guide/install.md"})
        >>> [cites_source("- Run make. [docs/guide/install.md]", [doc], n)
        ...  for n in ("guide/install.md", "docs/guide/install.md", "install.md")]
        [True, True, False]
    """
    return any(
        name in (d.metadata.get("source"), source_name(d.metadata)) for d in citations(answer, documents)
    )


def cited_answer(answer: str, gold: str, documents: Sequence[Document]) -> float:
    """1.0 when the passages the answer cites contain the gold answer (normalised; each part of a
    "; "-separated one in some cited passage), else 0.0."""
    return _holds([d.text for d in citations(answer, documents)], gold)


def quotations(answer: str) -> list[str]:
    """The sentences the answer quotes: double-quoted text of 3+ words, and extractive `- ... [src]` lines."""
    found = [m.group(1) for m in _EXTRACTIVE_LINE.finditer(answer)]
    found.extend(
        q for q in (m.group(1) for m in _QUOTED.finditer(answer)) if len(q.split()) >= _MIN_QUOTE_WORDS
    )
    return [q.strip() for q in found if normalize_answer(q)]


def quotes_grounded(answer: str, documents: Sequence[Document]) -> float | None:
    """1.0 when every quotation occurs in a retrieved passage (normalised), 0.0 if one does not; None
    when the answer quotes nothing."""
    quotes = quotations(answer)
    if not quotes:
        return None
    passages = [f" {normalize_answer(d.text)} " for d in documents]
    grounded = all(any(f" {normalize_answer(q)} " in p for p in passages) for q in quotes)
    return 1.0 if grounded else 0.0


def score_answer(answer: str, gold: str, documents: Sequence[Document]) -> dict[str, float | None]:
    """Every answer metric of one answer (see the module docstring), keyed as in `ANSWER_METRICS`."""
    return {
        "answer_contains": answer_contains(answer, gold),
        "answer_f1": token_f1(answer, gold),
        "cited_answer": cited_answer(answer, gold, documents),
        "quotes_grounded": quotes_grounded(answer, documents),
    }
