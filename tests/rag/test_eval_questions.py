"""Loading labelled questions: the project's JSON Lines format and BEIR folders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag.errors import FilterSyntaxError, InvalidRequestError
from rag.eval import Question, Relevant, load_beir, load_questions, parse_questions

DATA = Path(__file__).resolve().parents[2] / "data"


def test_sample_questions_load() -> None:
    qs = load_questions(DATA / "questions.jsonl")
    assert len(qs) == 74 and qs.unit_field == "source"
    assert sum(1 for q in qs if q.filter) == 11
    graded = [q for q in qs if any(r.grade == 2 for r in q.relevant)]
    assert graded and all(q.qrels()[q.relevant[0].key] >= 1 for q in graded)
    paged = [r for q in qs for r in q.relevant if r.page is not None]
    assert {r.source for r in paged} >= {"manuals/node-v2-hardware-manual.pdf"}


def test_parse_fields_and_defaults() -> None:
    line = json.dumps(
        {
            "question": "Q?",
            "relevant": [{"source": "m.pdf", "page": 3, "grade": 2}, {"source": "m.pdf", "page": 3}],
            "answer": "A",
            "filter": "page == 3",
            "id": "x1",
        }
    )
    (q,) = parse_questions(["", line]).questions
    assert q == Question("x1", "Q?", (Relevant("m.pdf", 3, 2), Relevant("m.pdf", 3, 1)), "A", "page == 3")
    assert q.qrels() == {("m.pdf", 3): 2}  # the higher grade wins when a unit is labelled twice
    (unnamed,) = parse_questions(['{"question": "Q", "relevant": [{"source": "a"}]}']).questions
    assert unnamed.id == "1" and unnamed.answer is None and unnamed.filter is None


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "'qs.jsonl' line 1: invalid JSON"),
        ("[1, 2]", "expected a JSON object, got [1, 2]"),
        ('{"question": "", "relevant": [{"source": "a"}]}', "'question' must be a non-empty string, got ''"),
        ('{"question": "Q", "relevant": []}', "'relevant' must be a non-empty list, got []"),
        (
            '{"question": "Q", "relevant": ["a"]}',
            'each relevant entry must be an object, got \'a\'; write {"source": "a"}',
        ),
        ('{"question": "Q", "relevant": [3]}', 'got 3; write {"source": "guide/install.md"}'),
        ('{"question": "Q", "relevant": [{"page": 1}]}', "needs a non-empty 'source'"),
        (
            '{"question": "Q", "relevant": [{"source": "a", "page": 0}]}',
            "'page' must be an integer >= 1, got 0",
        ),
        (
            '{"question": "Q", "relevant": [{"source": "a", "grade": 0}]}',
            "'grade' must be an integer >= 1, got 0",
        ),
        ('{"question": "Q", "relevant": [{"source": "a"}], "filter": 3}', "'filter' must be a string, got 3"),
    ],
)
def test_bad_lines_are_named(line: str, message: str) -> None:
    with pytest.raises(InvalidRequestError) as info:
        parse_questions([line], "qs.jsonl")
    assert message in str(info.value) and "'qs.jsonl' line 1" in str(info.value)


def test_bad_filter_and_empty_and_missing_files(tmp_path: Path) -> None:
    with pytest.raises(FilterSyntaxError):
        parse_questions(['{"question": "Q", "relevant": [{"source": "a"}], "filter": "page =="}'])
    with pytest.raises(InvalidRequestError, match="no questions in '<questions>'"):
        parse_questions(["", "  "])
    with pytest.raises(InvalidRequestError, match="cannot read questions file"):
        load_questions(tmp_path / "absent.jsonl")


def _beir(folder: Path) -> Path:
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text('{"_id": "d1", "title": "T", "text": "x"}\n', encoding="utf-8")
    queries = [
        {"_id": "q1", "text": "first"},
        {"_id": "q2", "text": "second"},
        {"_id": "q3", "text": "third"},
    ]
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries), encoding="utf-8")
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t2\nq3\td9\t0\n", encoding="utf-8"
    )
    return folder


def test_beir_keeps_only_judged_queries(tmp_path: Path) -> None:
    qs = load_beir(_beir(tmp_path / "beir"))
    assert qs.unit_field == "doc_id"
    # q2 has no judgement and q3 only a zero one: neither is evaluated.
    assert [(q.id, q.text, q.qrels()) for q in qs] == [("q1", "first", {("d1", None): 1, ("d2", None): 2})]


def test_beir_errors_name_the_file(tmp_path: Path) -> None:
    folder = _beir(tmp_path / "beir")
    with pytest.raises(InvalidRequestError, match=r"qrels/dev\.tsv' is missing"):
        load_beir(folder, "dev")
    (folder / "qrels" / "test.tsv").write_text("q1\td1\n", encoding="utf-8")
    with pytest.raises(InvalidRequestError, match="line 1: expected query-id, corpus-id, score"):
        load_beir(folder)
    (folder / "qrels" / "test.tsv").write_text("q7\td1\t1\n", encoding="utf-8")
    with pytest.raises(InvalidRequestError, match=r"no query judged in .*test\.tsv' is in .*queries\.jsonl'"):
        load_beir(folder)


def test_beir_qrels_judging_absent_queries_keep_the_present_ones(tmp_path: Path) -> None:
    folder = _beir(tmp_path / "beir")
    (folder / "qrels" / "test.tsv").write_text("q7\td1\t1\nq1\td1\t1\nq8\td2\t1\n", encoding="utf-8")
    qs = load_beir(folder)
    assert [q.id for q in qs] == ["q1"]
    assert len(qs.warnings) == 1
    assert (
        "judges 2 queries absent from queries.jsonl ('q7', 'q8'); evaluating the 1 present" in qs.warnings[0]
    )
