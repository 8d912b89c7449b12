"""Labelled questions: the project's JSON Lines format and the BEIR folder layout.

A question's gold answers are given by source (and optionally PDF page), never by chunk id, so labels
survive re-chunking. A retrieved chunk counts for the label whose source (and page, when the label has
one) it carries; `QuestionSet.unit_field` names the chunk metadata holding the source: `source` for
files ingested from a folder, `doc_id` for BEIR corpora ingested with `--id-field _id`.

JSON Lines, one question a line (`grade` defaults to 1; `filter` is optional filter text):

    {"question": "What fuse protects the board?", "relevant": [{"source": "manual.pdf", "page": 4}],
     "answer": "2.5 A slow-blow", "filter": "audience == 'operators'"}

BEIR: `corpus.jsonl`, `queries.jsonl` (`{"_id", "text"}`) and `qrels/<split>.tsv` (`query-id`,
`corpus-id`, `score`, tab-separated, with a header). Only queries with at least one judgement above 0
are kept: unjudged queries would pull every average down.

Example:
    >>> qs = parse_questions(['{"question": "Where?", "relevant": [{"source": "a.md"}]}'])
    >>> qs.questions[0].relevant[0].key, qs.unit_field
    (('a.md', None), 'source')
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag.errors import InvalidRequestError
from rag.filters import as_filter

__all__ = ["Question", "QuestionSet", "Relevant", "load_beir", "load_questions", "parse_questions"]

UnitKey = tuple[str, int | None]


@dataclass(frozen=True)
class Relevant:
    """One relevant unit of a question: a source, optionally one of its pages, with a grade (> 0).

    Example:
        >>> Relevant("manual.pdf", page=3, grade=2).key
        ('manual.pdf', 3)
    """

    source: str
    page: int | None = None
    grade: int = 1

    @property
    def key(self) -> UnitKey:
        """The unit this label names: `(source, page)`, page None for a whole source."""
        return (self.source, self.page)


@dataclass(frozen=True)
class Question:
    """A question with its relevant units, an optional gold answer and an optional filter text.

    Example:
        >>> q = Question("q1", "Which port?", (Relevant("guide.md"),), answer="8080")
        >>> q.qrels()
        {('guide.md', None): 1}
    """

    id: str
    text: str
    relevant: tuple[Relevant, ...]
    answer: str | None = None
    filter: str | None = None

    def qrels(self) -> dict[UnitKey, int]:
        """The relevant units and their grades (the highest, when a unit is labelled twice)."""
        grades: dict[UnitKey, int] = {}
        for label in self.relevant:
            grades[label.key] = max(grades.get(label.key, 0), label.grade)
        return grades


@dataclass(frozen=True)
class QuestionSet:
    """Questions, and the chunk metadata field that holds the source their labels name.

    Example:
        >>> qs = QuestionSet((Question("1", "Where?", (Relevant("a.md"),)),))
        >>> len(qs), [q.id for q in qs]
        (1, ['1'])
    """

    questions: tuple[Question, ...]
    unit_field: str = "source"
    warnings: tuple[str, ...] = ()
    """What loading left out and why (a BEIR qrels file judging queries the queries file lacks)."""

    def __len__(self) -> int:
        return len(self.questions)

    def __iter__(self) -> Iterator[Question]:
        return iter(self.questions)


def _bad(where: str, message: str) -> InvalidRequestError:
    return InvalidRequestError(f"{where}: {message}")


def _relevant(item: object, where: str) -> Relevant:
    if not isinstance(item, Mapping):
        example = {"source": item if isinstance(item, str) else "guide/install.md"}
        raise _bad(where, f"each relevant entry must be an object, got {item!r}; write {json.dumps(example)}")
    source, page, grade = item.get("source"), item.get("page"), item.get("grade", 1)
    if not isinstance(source, str) or not source:
        raise _bad(where, f"relevant entry needs a non-empty 'source', got {item!r}")
    if page is not None and (isinstance(page, bool) or not isinstance(page, int) or page < 1):
        raise _bad(where, f"'page' must be an integer >= 1, got {page!r}")
    if isinstance(grade, bool) or not isinstance(grade, int) or grade < 1:
        raise _bad(where, f"'grade' must be an integer >= 1, got {grade!r}")
    return Relevant(source, page, grade)


def _question(record: Mapping[str, Any], number: int, where: str) -> Question:
    text, relevant, filter_text = record.get("question"), record.get("relevant"), record.get("filter")
    if not isinstance(text, str) or not text.strip():
        raise _bad(where, f"'question' must be a non-empty string, got {text!r}")
    if not isinstance(relevant, list) or not relevant:
        raise _bad(where, f"'relevant' must be a non-empty list, got {relevant!r}")
    if filter_text is not None:
        if not isinstance(filter_text, str):
            raise _bad(where, f"'filter' must be a string, got {filter_text!r}")
        as_filter(filter_text)  # a syntax error surfaces now, with the line, not mid-sweep
    answer = record.get("answer")
    return Question(
        str(record.get("id", number)),
        text,
        tuple(_relevant(item, where) for item in relevant),
        answer if isinstance(answer, str) else None,
        filter_text or None,
    )


def parse_questions(lines: Iterable[str], name: str = "<questions>") -> QuestionSet:
    """Questions from JSON Lines text (blank lines ignored); ids default to the line number.

    Raises:
        InvalidRequestError: a line that is not a valid question (the message names the line).
    """
    questions = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{name!r} line {number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise _bad(where, f"invalid JSON: {exc}") from exc
        if not isinstance(record, dict):
            raise _bad(where, f"expected a JSON object, got {record!r}")
        questions.append(_question(record, number, where))
    if not questions:
        raise InvalidRequestError(f"no questions in {name!r}")
    return QuestionSet(tuple(questions))


def load_questions(path: str | os.PathLike[str]) -> QuestionSet:
    """Questions from a JSON Lines file (see the module docstring).

    Raises:
        InvalidRequestError: the file cannot be read, or a line is not a valid question.
    """
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise InvalidRequestError(f"cannot read questions file {str(path)!r}: {exc.strerror or exc}") from exc
    return parse_questions(text.splitlines(), str(path))


def _read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8", newline="") as handle:
        for number, row in enumerate(csv.reader(handle, delimiter="\t"), start=1):
            if not row or (number == 1 and row[0].strip() == "query-id"):
                continue
            try:
                query_id, doc_id, score = row[0].strip(), row[1].strip(), int(row[2])
            except (IndexError, ValueError) as exc:
                raise InvalidRequestError(
                    f"{str(path)!r} line {number}: expected query-id, corpus-id, score"
                ) from exc
            if score > 0:
                qrels.setdefault(query_id, {})[doc_id] = score
    return qrels


def _read_queries(path: Path) -> dict[str, str]:
    queries = {}
    with path.open(encoding="utf-8-sig") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                queries[str(record["_id"])] = str(record["text"])
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise InvalidRequestError(f"{str(path)!r} line {number}: expected {{'_id', 'text'}}") from exc
    return queries


def load_beir(folder: str | os.PathLike[str], split: str = "test") -> QuestionSet:
    """The judged queries of a BEIR folder's split; labels name corpus ids (`unit_field="doc_id"`).

    Ingest the corpus first with `rag ingest FOLDER/corpus.jsonl --id-field _id --text-field title,text`
    so every chunk carries its record id as `doc_id`. Judged queries missing from `queries.jsonl` are
    left out and named in `QuestionSet.warnings` (public sets ship such qrels); the rest are evaluated.

    Raises:
        InvalidRequestError: a missing file, a qrels line or query that cannot be parsed, or no judged
            query in the queries file.
    """
    root = Path(folder)
    queries_path, qrels_path = root / "queries.jsonl", root / "qrels" / f"{split}.tsv"
    for needed in (queries_path, qrels_path):
        if not needed.is_file():
            raise InvalidRequestError(f"not a BEIR folder: {str(needed)!r} is missing")
    qrels, queries = _read_qrels(qrels_path), _read_queries(queries_path)
    missing = sorted(set(qrels) - set(queries))
    warnings: tuple[str, ...] = ()
    if missing:
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        warnings = (
            f"{str(qrels_path)!r} judges {len(missing)} queries absent from queries.jsonl "
            f"({', '.join(map(repr, missing[:5]))}{more}); "
            f"evaluating the {len(qrels) - len(missing)} present",
        )
    questions = tuple(
        Question(
            qid, queries[qid], tuple(Relevant(doc, None, grade) for doc, grade in sorted(judged.items()))
        )
        for qid, judged in qrels.items()
        if qid in queries
    )
    if not questions:
        raise InvalidRequestError(f"no query judged in {str(qrels_path)!r} is in {str(queries_path)!r}")
    return QuestionSet(questions, unit_field="doc_id", warnings=warnings)
