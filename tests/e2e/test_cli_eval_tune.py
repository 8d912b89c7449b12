"""`rag eval --tune`: the sweep, the choice recorded in the home and used by later commands (issue 16.3).

The corpus gives each question one word that only its page holds, and the store embeds with 2-dimensional
hashing, whose vectors cannot tell the pages apart: lexical search ranks every page first, vector search
does not, so the choice is known in advance.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from click.testing import Result

from ingest import open_home
from rag.advisors.memory_vector import VectorStoreChatMemoryAdvisor
from rag.client import ChatClient
from rag.documents import SearchRequest
from rag.retrieval.scope import KIND_KEY
from rag.testing import FakeChatModel
from tests.e2e.serve_helpers import ServeProcess, rag_env

RunCli = Callable[..., Result]
PAGES = {
    "pumps.md": "The zirconium gasket seals the harbour pump before the winter storms arrive.",
    "lamps.md": "Polish the lantern lens with vinegar so the beacon shines across the harbour.",
    "bells.md": "The fog bell rings every minute while the harbour mist stays thick.",
    "ropes.md": "Coil the hawser ropes on the quay after the ferry leaves the harbour.",
    "boats.md": "The pilot boat carries a spare tiller for the harbour crossing.",
    "gulls.md": "Gulls nest on the breakwater near the harbour wall every spring.",
}
QUESTIONS = [
    ("What seals the pump? zirconium", "pumps.md"),
    ("How is the lens cleaned? vinegar", "lamps.md"),
    ("When does the bell ring? fog", "bells.md"),
    ("Where are the hawser ropes kept?", "ropes.md"),
    ("What spare does the pilot boat carry? tiller", "boats.md"),
    ("Where do gulls nest? breakwater", "gulls.md"),
]
STORE = ("--store", "numpy")


@pytest.fixture
def labelled(cli: RunCli, tmp_path: Path) -> Path:
    """A home holding the pages (2-dimensional hashing) and the path of the labelled questions."""
    folder = tmp_path / "harbour"
    folder.mkdir()
    for name, text in PAGES.items():
        (folder / name).write_text(text + "\n", encoding="utf-8")
    result = cli("ingest", folder, *STORE, "--embedder", "hashing:2")
    assert result.exit_code == 0, result.stderr
    questions = tmp_path / "questions.jsonl"
    rows = [{"question": text, "relevant": [{"source": source}]} for text, source in QUESTIONS]
    questions.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return questions


def _search_record(home: Path) -> dict[str, object]:
    record: dict[str, object] = json.loads((home / "stores.json").read_text(encoding="utf-8"))["numpy:rag"]
    search = record["search"]
    assert isinstance(search, dict)
    return search


def test_tune_records_the_best_mode_and_later_searches_use_it(
    cli: RunCli, labelled: Path, rag_home: Path
) -> None:
    before = cli("query", "Where do gulls nest? breakwater", *STORE, "--json")
    result = cli("eval", labelled, *STORE, "--top-k", "3", "--tune")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["mode", "weight", "ndcg@3", "recall@3", "mrr@3", "hit_rate@3"]
    assert [line[2:17].split() for line in lines[1:16]] == [
        ["vector", "-"],
        ["lexical", "-"],
        *[["hybrid", w] for w in ("0", "0.05", "0.1", "0.15")],  # 0.15: the hashing embedder's default
        *[["hybrid", f"{step / 10:g}"] for step in range(2, 11)],
    ]
    assert lines[2].startswith("* lexical ")  # the chosen row is marked
    assert lines[16] == "best: lexical (nDCG@3 1.000)"
    assert lines[17].startswith("was:  hybrid, vector weight 0.15 (nDCG@3 ")
    assert float(lines[1].split()[2]) < 1.0  # vector search did lose
    record = _search_record(rag_home)
    assert record.pop("tuned_at")
    assert record == {
        "mode": "lexical",
        "vector_weight": 0.15,  # the weight in effect is kept when a single mode wins
        "tuned_on": str(labelled.resolve()),
        "top_k": 3,
        "ndcg": 1.0,
    }
    assert "recorded in " in result.stderr
    # rag query now searches lexically, as an explicit --mode lexical does; an option still wins.
    query = ("query", "Where do gulls nest? breakwater", *STORE, "--json")
    tuned, lexical = cli(*query), cli(*query, "--mode", "lexical")
    assert json.loads(tuned.stdout) == json.loads(lexical.stdout)
    assert {hit["score_kind"] for hit in json.loads(tuned.stdout)} == {"bm25"}
    assert json.loads(cli(*query, "--mode", "hybrid").stdout) == json.loads(before.stdout)
    info = json.loads(cli("info", *STORE, "--json").stdout)["search"]
    assert (info["mode"], info["origin"].split(" at ")[0]) == ("lexical", f"tuned on {labelled.resolve()}")
    assert "\nsearch:          lexical (tuned on " in cli("info", *STORE).stdout


def test_tune_records_a_hybrid_weight(cli: RunCli, labelled: Path, rag_home: Path) -> None:
    args = ("eval", labelled, *STORE, "-k", "3", "--tune", "--mode", "hybrid", "--weights", "1,0")
    result = cli(*args, "--json")
    assert result.exit_code == 0, result.stderr
    sweep = json.loads(result.stdout)
    assert [(row["mode"], row["vector_weight"]) for row in sweep["rows"]] == [
        ("hybrid", 0.0),
        ("hybrid", 1.0),
    ]
    assert sweep["rows"][1]["ndcg"] < sweep["rows"][0]["ndcg"] == 1.0
    assert (sweep["best"]["vector_weight"], sweep["vector_weight"]) == (0.0, 0.0)
    record = _search_record(rag_home)
    assert (record["mode"], record["vector_weight"]) == ("hybrid", 0.0)
    hits = cli("query", "Where do gulls nest? breakwater", *STORE, "--json")
    explicit = cli("query", "Where do gulls nest? breakwater", *STORE, "--json", "--vector-weight", "0")
    assert json.loads(hits.stdout) == json.loads(explicit.stdout)


def test_rag_serve_searches_with_the_tuned_setting(cli: RunCli, labelled: Path, rag_home: Path) -> None:
    assert (
        cli("eval", labelled, *STORE, "-k", "3", "--tune", "--mode", "hybrid", "--weights", "0,1").exit_code
        == 0
    )
    query = "Where do gulls nest? breakwater"
    expected = cli("query", query, *STORE, "--json", "--mode", "hybrid", "--vector-weight", "0")
    server = ServeProcess([], rag_env(rag_home))
    try:
        tuned = httpx.post(f"{server.base}/v1/search", json={"query": query, "top_k": 4}).json()["data"]
        given = {"query": query, "top_k": 4, "vector_weight": 1.0}
        vector = httpx.post(f"{server.base}/v1/search", json=given).json()["data"]
    finally:
        server.stop()
    assert [(hit["id"], hit["score"]) for hit in tuned] == [
        (hit["id"], hit["score"]) for hit in json.loads(expected.stdout)
    ]
    assert [hit["id"] for hit in vector] != [hit["id"] for hit in tuned]  # a request's own weight still wins


def test_dry_run_prints_the_choice_and_writes_nothing(cli: RunCli, labelled: Path, rag_home: Path) -> None:
    records = (rag_home / "stores.json").read_bytes()
    result = cli("eval", labelled, *STORE, "--top-k", "1,3", "--tune", "--dry-run")
    assert result.exit_code == 0, result.stderr
    assert "best: lexical (nDCG@3 1.000)" in result.stdout.splitlines()  # the largest k
    assert result.stderr.splitlines()[-1] == "dry run: nothing recorded"
    assert (rag_home / "stores.json").read_bytes() == records
    result = cli("eval", labelled, *STORE, "--tune", "--no-record", "--json")
    assert result.exit_code == 0 and json.loads(result.stdout)["best"]["mode"] == "lexical"
    assert (rag_home / "stores.json").read_bytes() == records


def test_tune_reports_its_searches_as_progress(
    cli: RunCli, labelled: Path, rag_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sweep runs many searches; its progress goes to stderr as `rag eval`'s does, counted to the end."""
    monkeypatch.setenv("RAG_PROGRESS_INTERVAL", "0")
    result = cli("eval", labelled, *STORE, "--tune", "--dry-run", "--weights", "0.2,0.8")
    assert result.exit_code == 0, result.stderr
    counts = [line for line in result.stderr.splitlines() if line.startswith("eval: ")]
    total = len(QUESTIONS) * 4  # vector, lexical and hybrid at two weights
    assert counts[0] == f"eval: 1/{total} searches (4%)"
    assert counts[-1] == f"eval: {total}/{total} searches (100%)"
    assert len(counts) == total and result.stdout.splitlines()[0].split()[0] == "mode"  # stdout: the table


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--dry-run",), "--dry-run goes with --tune"),
        (("--tune", "--threshold", "0,0.3"), "--tune searches at one --threshold; got 2"),
        (("--tune", "--filter", "none", "--filter", "question"), "--tune searches with one --filter setting"),
        (("--tune", "--csv", "out.csv"), "--tune measures retrieval only; it cannot be combined with --csv"),
        (("--tune", "--weights", "0.5,2"), "expected numbers >= 0 and <= 1, got '0.5,2'"),
    ],
)
def test_options_tune_cannot_honour_are_refused(
    cli: RunCli, labelled: Path, rag_home: Path, extra: tuple[str, ...], message: str
) -> None:
    records = (rag_home / "stores.json").read_bytes()
    result = cli("eval", labelled, *STORE, *extra)
    assert result.exit_code == 2
    assert message in result.stderr
    assert (rag_home / "stores.json").read_bytes() == records


def test_tune_never_counts_a_chat_memory_turn(cli: RunCli, labelled: Path, rag_home: Path) -> None:
    """A turn repeating each question ranks first in the raw store; the sweep's figures must not see it."""
    args = ("eval", labelled, *STORE, "--top-k", "1", "--tune", "--dry-run", "--json")
    before = cli(*args)
    assert before.exit_code == 0, before.stderr
    with open_home(rag_home, store="numpy") as opened:
        advisor = VectorStoreChatMemoryAdvisor(opened.store)
        client = ChatClient(FakeChatModel(default="Noted."), advisors=[advisor])
        for question, _ in QUESTIONS:
            client.prompt(question).advisors(conversation_id="notebook").call().content()
        opened.save()
        first = opened.store.similarity_search(SearchRequest(QUESTIONS[0][0], top_k=1, mode="lexical"))
        assert first[0].metadata[KIND_KEY] == "chat_memory"  # what the store itself ranks first
    after = cli(*args)
    assert after.exit_code == 0, after.stderr
    assert json.loads(after.stdout) == json.loads(before.stdout)  # every row, every metric
    assert json.loads(after.stdout)["best"]["ndcg"] == 1.0
