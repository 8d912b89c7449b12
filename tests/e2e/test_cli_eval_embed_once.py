"""`rag eval` through the real entry point embeds each question once per run, and none in lexical mode."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

from rag.testing import FakeEmbedding
from tests.openai_server import OpenAIServer, RecordedRequest, Reply

DOCS = [
    ("1", "the pump primes itself before dawn"),
    ("2", "valves open at dawn and close at dusk"),
    ("3", "the tank fills from the river"),
]


def test_rag_eval_embeds_each_query_once_over_http(
    cli: Callable[..., Result], tmp_path: Path, openai_server: OpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the real CLI, with a counting embeddings server on loopback."""
    fake = FakeEmbedding(dimensions=8)

    def embeddings(request: RecordedRequest) -> Reply:
        inputs = request.json["input"]
        vectors = fake.embed(inputs).tolist()
        data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
        return Reply(json={"object": "list", "data": data, "model": request.json["model"]})

    openai_server.default = embeddings
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-embed")
    beir = tmp_path / "beir"
    (beir / "qrels").mkdir(parents=True)
    corpus = [{"_id": doc_id, "text": text} for doc_id, text in DOCS]
    (beir / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in corpus), encoding="utf-8")
    queries = [{"_id": "q1", "text": "when do valves open"}, {"_id": "q2", "text": "how does the pump prime"}]
    (beir / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries), encoding="utf-8")
    (beir / "qrels" / "test.tsv").write_text("q1\t2\t1\nq2\t1\t1\n", encoding="utf-8")
    store = ("--store", "numpy", "--embedder", "openai:test-embed")
    assert cli("ingest", beir / "corpus.jsonl", "--id-field", "_id", *store).exit_code == 0
    openai_server.requests.clear()
    modes = ("--mode", "vector,lexical,hybrid", "--threshold", "0,0.2", "--top-k", "1,2")
    result = cli("eval", beir, *store, *modes)
    assert result.exit_code == 0, result.stderr
    embedded = Counter(text for r in openai_server.requests for text in r.json["input"])
    del embedded["dimension probe"]  # the client asks the model's width once per opening
    assert embedded == {"when do valves open": 1, "how does the pump prime": 1}
    openai_server.requests.clear()
    assert cli("eval", beir, *store, "--mode", "lexical").exit_code == 0
    assert [r.json["input"] for r in openai_server.requests] in ([], [["dimension probe"]])
