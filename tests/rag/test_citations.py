"""A passage is cited by its file's name, `ROOT/PATH`, and a JSON Lines record by its id after it
(`corpus/corpus.jsonl#12209494`), wherever a passage is cited."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ingest import IngestPipeline, ReaderOptions, RecursiveSplitter
from rag import Document, HashingEmbedding
from rag.advisors import QuestionAnswerAdvisor
from rag.advisors.question_answer import format_document
from rag.citations import citation
from rag.client import ChatClient
from rag.hits import HIT_KEYS, hit_record
from rag.models import ExtractiveChatModel
from rag.serve.wire import citations_text, source_rows
from rag.testing import FakeChatModel
from stores import NumpyVectorStore

RECORDS = [
    {"_id": "12209494", "title": "Tides", "text": "Spring tides flood the causeway twice a month."},
    {"_id": "77", "title": "Lamps", "text": "The beacon lamp burns paraffin oil every night."},
]


@pytest.fixture
def store(tmp_path: Path) -> NumpyVectorStore:
    """The two records ingested from a real JSON Lines file through the real pipeline."""
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in RECORDS), encoding="utf-8")
    store = NumpyVectorStore(HashingEmbedding())
    options = ReaderOptions(text_field="title,text", id_field="_id")
    pipeline = IngestPipeline(store, RecursiveSplitter(200, 0), reader_options=options)
    report = pipeline.run([corpus])
    pipeline.manifest.close()
    assert report.ok and store.count() == 2
    return store


def test_a_jsonl_passage_in_the_qa_prompt_cites_its_record(store: NumpyVectorStore, tmp_path: Path) -> None:
    model = FakeChatModel(default="ok")
    client = ChatClient(model, advisors=[QuestionAnswerAdvisor(store, top_k=1)])
    client.prompt("When do spring tides flood the causeway?").call().content()
    # a file given alone has its folder as root
    assert f"[1] (source: {tmp_path.name}/corpus.jsonl#12209494)\nTides" in model.prompts[0].user_text


def test_the_extractive_answer_cites_the_record(store: NumpyVectorStore, tmp_path: Path) -> None:
    client = ChatClient(ExtractiveChatModel(), advisors=[QuestionAnswerAdvisor(store, top_k=1)])
    answer = client.prompt("When do spring tides flood the causeway?").call().content()
    assert f"[{tmp_path.name}/corpus.jsonl#12209494]" in answer


def test_other_chunks_are_cited_by_root_and_source_and_unsourced_ones_by_id() -> None:
    paged = Document("p", "Install it.", {"root": "docs", "source": "guide.pdf", "page": 3})
    assert format_document(1, paged) == "[1] (source: docs/guide.pdf, page 3)\nInstall it."
    assert citation(Document("o", "Added from Python.", {"source": "notes.md"})) == "notes.md"
    assert format_document(2, Document("bare", "No source.")) == "[2] (source: bare)\nNo source."
    assert citation(Document("r", "x", {"source": "a.jsonl", "doc_id": 7})) == "a.jsonl#7"


def test_serve_sources_cite_the_record(store: NumpyVectorStore, tmp_path: Path) -> None:
    hits = sorted(store.get(), key=lambda d: str(d.metadata["doc_id"]))
    rows = source_rows(hits)
    name = f"{tmp_path.name}/corpus.jsonl"
    assert [row["citation"] for row in rows] == [f"{name}#12209494", f"{name}#77"]
    assert [row["source"] for row in rows] == ["corpus.jsonl", "corpus.jsonl"]  # the file, for filters
    assert citations_text(hits) == f"\n\nSources:\n[1] {name}#12209494\n[2] {name}#77"


def test_a_hit_record_has_every_key_with_null_for_what_the_chunk_lacks() -> None:
    python = Document("p1", "Added from Python.", {"source": "notes.md"}, score=0.5, scores={"bm25": 2.0})
    bare = Document("p2", "No source.", {"page": 3})
    rows = [hit_record(1, python), hit_record(2, bare)]
    assert all(tuple(row) == HIT_KEYS for row in rows)
    assert [(r["citation"], r["source"], r["root"], r["page"]) for r in rows] == [
        ("notes.md", "notes.md", None, None),
        (None, None, None, 3),
    ]
    assert (rows[0]["score"], rows[0]["cosine"], rows[0]["scores"]) == (0.5, None, {"bm25": 2.0})


@pytest.mark.parametrize("name", ["rag.citations", "rag.cli._sources", "rag.hits"])
def test_the_docstring_examples_run(name: str) -> None:
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0 and result.failed == 0
