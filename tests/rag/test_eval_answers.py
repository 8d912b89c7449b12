"""Answer metrics (SQuAD normalisation, containment, token F1), grounding checks, sweeps with answers."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from ingest import IngestPipeline, RecursiveSplitter
from rag import Document, HashingEmbedding, SearchRequest
from rag.chat.messages import Prompt
from rag.errors import InvalidRequestError, StructuredOutputError, TemplateError
from rag.eval import Question, Relevant, evaluate
from rag.eval.answering import AnswerScorer
from rag.eval.answers import (
    answer_contains,
    citations,
    cited_answer,
    cites_source,
    normalize_answer,
    quotations,
    quotes_grounded,
    token_f1,
)
from rag.eval.judge import JUDGE_TEMPLATE_PATH, LLMJudge
from rag.models import ExtractiveChatModel, OpenAIChatModel
from rag.retrieval.documents_view import DocumentsView
from rag.testing import FakeChatModel
from stores import NumpyVectorStore
from tests.openai_server import OpenAIServer, Reply, completion

BEACON = Document("b1", "The harbour beacon is lit at dusk by the keeper.", {"source": "beacon.md"})
VALVES = Document(
    "v1", "The north valves open at dawn, an hour before the pumps.", {"source": "valves.md", "page": 2}
)


def test_squad_normalisation() -> None:
    assert normalize_answer("The  Harbour's BEACON, at dusk!") == "harbours beacon at dusk"
    assert normalize_answer("An apple a day") == "apple day"
    assert normalize_answer("...") == ""


def test_containment_and_f1_match_a_hand_computation() -> None:
    # SQuAD-style case: gold "at dusk" (tokens at, dusk).
    answer = "The beacon is lit at dusk [1]."
    # Normalised answer tokens: beacon is lit at dusk 1 (6); shared with the gold: at, dusk (2).
    # precision 2/6, recall 2/2 -> F1 = 2 * (1/3) * 1 / (1/3 + 1) = 0.5
    assert token_f1(answer, "at dusk") == pytest.approx(0.5)
    assert answer_contains(answer, "At Dusk.") == 1.0
    # Whole words only: "dusk" is not contained in "dusky".
    assert answer_contains("a dusky sky", "dusk") == 0.0
    # Gold "the keeper lights it at dusk": tokens keeper lights it at dusk (5); answer "lit at dusk by keeper"
    # shares at, dusk, keeper (3): precision 3/5, recall 3/5 -> F1 0.6; not contained.
    assert token_f1("lit at dusk by the keeper", "the keeper lights it at dusk") == pytest.approx(0.6)
    assert answer_contains("lit at dusk by the keeper", "the keeper lights it at dusk") == 0.0
    # Repeated tokens count once per occurrence in both (Counter intersection).
    assert token_f1("dusk dusk dusk", "dusk") == pytest.approx(2 * (1 / 3) * 1 / (1 / 3 + 1))
    assert token_f1("nothing shared", "at dusk") == 0.0
    assert token_f1("", "") == 1.0 and token_f1("", "x") == 0.0


def test_a_gold_answer_of_several_parts_needs_each_part() -> None:
    """data/README.md: parts of a gold answer are separated by "; " and each appears in the sources."""
    gold = "03:15; 14 most recent"
    answer = "- Backups run at 03:15 local time. [b.md]\n- It keeps the 14 most recent archives. [b.md]"
    assert answer_contains(answer, gold) == 1.0
    assert answer_contains("- Backups run at 03:15 local time. [b.md]", gold) == 0.0
    first = Document("1", "Backups run at 03:15 local time.", {"source": "b.md"})
    second = Document("2", "It keeps the 14 most recent archives.", {"source": "c.md"})
    assert cited_answer("[b.md] [c.md]", gold, [first, second]) == 1.0
    assert cited_answer("[b.md]", gold, [first, second]) == 0.0


def test_citations_by_number_and_by_source() -> None:
    docs = [BEACON, VALVES]
    assert citations("Lit at dusk [1]; valves at dawn [2].", docs) == [BEACON, VALVES]
    assert citations("- The north valves open at dawn. [valves.md, page 2]", docs) == [VALVES]
    assert citations("See [beacon.md] and [3] and [valves.md, page 9].", docs) == [BEACON]
    assert cited_answer("At dusk [1].", "at dusk", docs) == 1.0
    assert cited_answer("At dusk [2].", "at dusk", docs) == 0.0  # the cited passage does not hold it
    assert cited_answer("At dusk.", "at dusk", docs) == 0.0  # nothing cited


def test_an_answer_citing_root_and_path_is_scored_whichever_name_the_gold_page_uses(tmp_path: Path) -> None:
    """Answers cite an ingested file as `ROOT/PATH`; a questions file may name it by its path alone."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "beacon.md").write_text("# Beacon\n\nThe harbour beacon is lit at dusk by the keeper.\n")
    (folder / "valves.md").write_text("# Valves\n\nThe north valves open at dawn before the pumps.\n")
    store = NumpyVectorStore(HashingEmbedding())
    pipeline = IngestPipeline(store, RecursiveSplitter())
    assert pipeline.run([folder]).ok
    pipeline.manifest.close()
    question = Question("q", "When is the harbour beacon lit?", (Relevant("beacon.md"),), answer="at dusk")
    passages = store.similarity_search(SearchRequest(question.text, top_k=2))
    scorer = AnswerScorer(ExtractiveChatModel())
    answer = scorer.answer(question.text, passages)
    assert "[docs/beacon.md]" in answer
    assert scorer.score(question, passages)["cited_answer"] == 1.0
    assert citations(answer, passages) == [d for d in passages if d.metadata["source"] == "beacon.md"]
    assert cites_source(answer, passages, "beacon.md") and cites_source(answer, passages, "docs/beacon.md")
    assert not cites_source(answer, passages, "valves.md")
    assert not cites_source(answer, passages, "docs/valves.md")


def test_quotes_must_occur_in_a_retrieved_passage() -> None:
    docs = [BEACON, VALVES]
    assert quotations('It says "the harbour beacon is lit" and "dusk".') == ["the harbour beacon is lit"]
    assert quotes_grounded('The guide says "the harbour beacon is lit at dusk" [1].', docs) == 1.0
    assert quotes_grounded('The guide says "the beacon is lit at noon" [1].', docs) == 0.0
    assert quotes_grounded("At dusk [1].", docs) is None
    extractive = "From the documents:\n- The harbour beacon is lit at dusk by the keeper. [beacon.md]"
    assert quotes_grounded(extractive, docs) == 1.0
    assert quotes_grounded(extractive, [VALVES]) == 0.0


def _store() -> NumpyVectorStore:
    store = NumpyVectorStore(HashingEmbedding())
    store.add([BEACON, VALVES])
    return store


QUESTIONS = [
    Question("q1", "When is the harbour beacon lit?", (Relevant("beacon.md"),), answer="at dusk"),
    Question("q2", "When do the north valves open?", (Relevant("valves.md"),), answer="at dawn"),
    Question("q3", "Who keeps the beacon?", (Relevant("beacon.md"),)),  # no gold answer: not scored
]


def _scripted(prompt: Prompt) -> str:
    question = prompt.messages[-1].metadata["question"]
    return {
        "When is the harbour beacon lit?": "The beacon is lit at dusk [1].",
        "When do the north valves open?": 'They say "the north valves open at noon" [valves.md, page 2].',
    }.get(question, "I cannot answer from the documents.")


def test_sweep_scores_answers_per_setting() -> None:
    model = FakeChatModel(_scripted)
    results = evaluate(_store(), QUESTIONS, top_k=[1, 2], answerer=model)
    assert results.answer_metrics == ("answer_contains", "answer_f1", "cited_answer", "quotes_grounded")
    by_question = {(r.question, r.top_k): r.answers for r in results.per_question}
    assert by_question[("q3", 1)] == {}
    q1 = by_question[("q1", 2)]
    assert (q1["answer_contains"], q1["answer_f1"], q1["cited_answer"], q1["quotes_grounded"]) == (
        1.0,
        pytest.approx(0.5),
        1.0,
        None,
    )
    # q2: "they say north valves open at noon valvesmd page 2" (10 tokens) vs "at dawn": "at" shared.
    # precision 1/10, recall 1/2 -> F1 = 2 * 0.05 / 0.6 = 1/6
    q2 = by_question[("q2", 2)]
    assert q2["answer_f1"] == pytest.approx(1 / 6)
    assert q2["answer_contains"] == 0.0 and q2["quotes_grounded"] == 0.0  # the quote says noon
    # The cited valves passage says "at dawn": the citation holds the gold answer.
    assert q2["cited_answer"] == 1.0
    row = next(r for r in results.rows if r.top_k == 2)
    assert row.answers["answer_contains"] == pytest.approx(0.5)  # q1 1, q2 0; q3 has no gold answer
    assert row.answers["quotes_grounded"] == 0.0  # only q2 quotes anything
    assert row.to_dict()["answer_f1"] == pytest.approx((0.5 + q2["answer_f1"]) / 2)
    assert results.table().splitlines()[0].split()[-4:] == ["contains", "f1", "cited", "grounded"]
    assert "answer_contains" in results.table(full=True).splitlines()[0]
    # The same question and passages are answered once, whatever settings share them.
    assert len(model.prompts) == len({(r.question, r.top_k) for r in results.per_question if r.answers})


def test_sweep_with_the_extractive_answerer_and_no_answers_scored_without_it() -> None:
    results = evaluate(_store(), QUESTIONS[:1], top_k=[1], answerer=ExtractiveChatModel())
    [row] = results.rows
    assert row.answers["answer_contains"] == 1.0 and row.answers["quotes_grounded"] == 1.0
    assert row.answers["cited_answer"] == 1.0
    plain = evaluate(_store(), QUESTIONS[:1], top_k=[1])
    assert plain.answer_metrics == () and plain.rows[0].answers == {}
    assert "contains" not in plain.table() and "answer_contains" not in plain.table(full=True)


def test_judge_scores_join_the_rows_with_the_judge_name() -> None:
    judge = LLMJudge(FakeChatModel(default='{"faithfulness": 0.25, "relevance": 1}'), name="strict-judge")
    results = evaluate(_store(), QUESTIONS[:2], top_k=[1], answerer=FakeChatModel(_scripted), judge=judge)
    assert results.judge == "strict-judge"
    assert results.answer_metrics[-2:] == ("faithfulness", "relevance")
    [row] = results.rows
    assert (row.answers["faithfulness"], row.answers["relevance"]) == (0.25, 1.0)
    assert '"judge": "strict-judge"' in results.to_json()


def test_a_judge_without_an_answerer_is_refused() -> None:
    judge = LLMJudge(FakeChatModel(default="{}"), name="j")
    with pytest.raises(InvalidRequestError, match="answerer"):
        evaluate(_store(), QUESTIONS, top_k=[1], judge=judge)


def test_plot_draws_answer_columns(tmp_path: object) -> None:
    results = evaluate(_store(), QUESTIONS, top_k=[1, 2], answerer=FakeChatModel(_scripted))
    figure = results.plot()
    assert [ax.get_title() for ax in figure.axes] == [
        "recall@k",
        "nDCG@k",
        "answer contains gold@k",
        "answer token F1@k",
    ]
    quotes = results.plot(metrics=["quotes_grounded"]).axes[0].lines[0].get_ydata()
    assert quotes[0] == 0.0 or math.isnan(quotes[0])


def test_scorer_answers_from_the_qa_template() -> None:
    model = FakeChatModel(default="ok")
    AnswerScorer(model).answer("When?", [BEACON])
    text = model.prompts[0].user_text
    assert "[1] (source: beacon.md)" in text and BEACON.text in text and text.startswith("When?")
    AnswerScorer(model).answer("When?", [])
    assert "No passage of the documents matched" in model.prompts[1].user_text


def test_llm_judge_over_http_with_scripted_verdicts(openai_server: OpenAIServer) -> None:
    with OpenAIChatModel(base_url=openai_server.base_url, api_key="sk-j", model="judge-m") as chat:
        judge = LLMJudge(chat)
        assert judge.name == "judge-m"
        openai_server.enqueue(
            Reply(json=completion('{"faithfulness": 0.9, "relevance": 0.4, "reason": "mostly supported"}')),
            Reply(json=completion("Looks faithful to me.")),
            Reply(json=completion('{"faithfulness": 1.5, "relevance": 0.4}')),
        )
        assert judge.grade("When is it lit?", "At dusk [1].", [BEACON]) == {
            "faithfulness": 0.9,
            "relevance": 0.4,
        }
        body = openai_server.requests[0].json
        assert body["temperature"] == 0.0
        prompt = body["messages"][0]["content"]
        assert prompt.startswith(JUDGE_TEMPLATE_PATH.read_text(encoding="utf-8")[:60])
        assert "When is it lit?" in prompt and BEACON.text in prompt and "At dusk [1]." in prompt
        for _ in range(2):
            with pytest.raises(
                StructuredOutputError, match="judge 'judge-m' did not reply with a JSON object"
            ):
                judge.grade("When is it lit?", "At dusk.", [BEACON])


def test_judge_template_needs_its_placeholders() -> None:
    with pytest.raises(TemplateError, match="context"):
        LLMJudge(FakeChatModel(default="{}"), template="Grade {answer} for {question}.")


def test_answers_read_at_k_passages_what_a_search_for_k_widens() -> None:
    store = NumpyVectorStore(HashingEmbedding())
    texts = [
        "Mount the lamp bracket on the wall first.",
        "Then tighten the lamp bracket with four screws.",
        "Closing words about nothing in particular.",
    ]
    store.add(Document(f"l{i}", t, {"source": "lamp.md", "chunk_index": i}) for i, t in enumerate(texts))
    question = Question(
        "q1", "How do I mount the lamp bracket?", (Relevant("lamp.md"),), answer="four screws"
    )
    view = DocumentsView(store)
    read_by_ask = DocumentsView(store, window=1).similarity_search(SearchRequest(question.text, top_k=1))
    assert "four screws" in read_by_ask[0].text  # one hit, widened by the next chunk
    for ks in ([1], [1, 2]):
        model = FakeChatModel(default="Four screws [1].")
        evaluate(view, [question], top_k=ks, answerer=model, answer_window=1)
        # At k=1 the passage holds its neighbour even when the k=2 search found that neighbour as a hit.
        assert read_by_ask[0].text in model.prompts[0].user_text
