"""`rag eval` scoring answers through the real entry point: offline answers, and a judge on loopback."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

from tests.openai_server import OpenAIServer, RecordedRequest, Reply, completion

Cli = Callable[..., Result]

QUESTIONS = [
    {"question": "How often do the keepers rotate?", "relevant": [{"source": "keepers.txt"}],
     "answer": "every fortnight"},
    {"question": "What floods the causeway twice a month?", "relevant": [{"source": "tides.md"}],
     "answer": "spring tides"},
    {"question": "Where is the beacon lamp mounted?", "relevant": [{"source": "guide/install.md"}]},
]  # fmt: skip


@pytest.fixture
def questions(tmp_path: Path) -> Path:
    path = tmp_path / "questions.jsonl"
    path.write_text("\n".join(json.dumps(q) for q in QUESTIONS) + "\n", encoding="utf-8")
    return path


def test_judge_on_a_loopback_server_grades_each_answer(
    cli: Cli,
    docs: Path,
    questions: Path,
    openai_server: OpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert cli("ingest", docs, "--store", "numpy").exit_code == 0

    def verdict(request: RecordedRequest) -> Reply:
        prompt = request.json["messages"][0]["content"]
        assert "You are grading an answer" in prompt and "<<<ANSWER" in prompt
        faithful = 1.0 if "fortnight" in prompt else 0.5
        body = json.dumps({"faithfulness": faithful, "relevance": 0.75, "reason": "scripted"})
        return Reply(json=completion(f"```json\n{body}\n```"))

    openai_server.enqueue(verdict, verdict)
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-judge-key")
    monkeypatch.delenv("RAG_CHAT_MODEL", raising=False)
    result = cli(
        "eval", questions, "--store", "numpy", "-k", "2", "--filter", "none",
        "--answer-with", "extractive", "--judge", "judge-model", "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["judge"] == "judge-model"
    assert payload["answer_metrics"][-2:] == ["faithfulness", "relevance"]
    [row] = payload["settings"]
    assert row["faithfulness"] == pytest.approx(0.75) and row["relevance"] == pytest.approx(0.75)
    assert row["answer_contains"] == pytest.approx(1.0)  # the extractive answers quote the gold text
    assert [r.json["model"] for r in openai_server.requests] == ["judge-model", "judge-model"]
    assert "graded by judge 'judge-model'" in result.stderr
    assert "answering the 2 questions with an answer using ExtractiveChatModel" in result.stderr


def test_no_answers_and_judge_usage_errors(cli: Cli, docs: Path, questions: Path) -> None:
    assert cli("ingest", docs, "--store", "numpy").exit_code == 0
    plain = cli("eval", questions, "--store", "numpy", "-k", "1", "--no-answers", "--wide")
    assert plain.exit_code == 0, plain.stderr
    assert plain.stdout.split()[2:6] == ["threshold", "top_k", "questions", "hit_rate"]
    assert "answer_f1" not in plain.stdout
    answered = cli("eval", questions, "--store", "numpy", "-k", "1", "--wide")
    assert answered.stdout.splitlines()[0].split()[-4:] == [
        "answer_contains", "answer_f1", "cited_answer", "quotes_grounded",
    ]  # fmt: skip
    refused = cli("eval", questions, "--store", "numpy", "--no-answers", "--judge", "m")
    assert refused.exit_code == 2
    assert "--judge grades generated answers" in refused.stderr
