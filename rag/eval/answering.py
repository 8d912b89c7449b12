"""Answering labelled questions from a setting's retrieved passages, and scoring the answers.

The prompt is the one `QuestionAnswerAdvisor` sends (its default templates, passages numbered `[n]`), so
an answer here is the answer a user of that setting would get. One answer is generated per distinct
(question, retrieved passages) pair: settings that retrieve the same passages share it.

Example:
    >>> from rag import Document
    >>> from rag.eval import Question, Relevant
    >>> from rag.models import ExtractiveChatModel
    >>> scorer = AnswerScorer(ExtractiveChatModel())
    >>> question = Question("q1", "When is the beacon lit?", (Relevant("b.md"),), answer="at dusk")
    >>> scores = scorer.score(question, [Document("1", "The beacon is lit at dusk.", {"source": "b.md"})])
    >>> scores["answer_contains"], scores["cited_answer"], scores["quotes_grounded"]
    (1.0, 1.0, 1.0)
"""

from __future__ import annotations

from collections.abc import Sequence

from rag.advisors.question_answer import DEFAULT_EMPTY_TEMPLATE, DEFAULT_TEMPLATE, format_document
from rag.chat.messages import Prompt, UserMessage
from rag.chat.model import ChatModel
from rag.documents import Document
from rag.eval.answers import ANSWER_METRICS, score_answer
from rag.eval.judge import JUDGE_METRICS, LLMJudge
from rag.eval.questions import Question

__all__ = ["AnswerScorer"]


class AnswerScorer:
    """Generates each question's answer with `model` from given passages, then scores it.

    Args:
        model: the answering chat model (the configured one, or `ExtractiveChatModel` offline).
        judge: an optional `LLMJudge` adding `faithfulness` and `relevance`.
    """

    def __init__(self, model: ChatModel, judge: LLMJudge | None = None) -> None:
        self.model = model
        self.judge = judge
        self.answers: dict[tuple[str, tuple[str, ...]], str] = {}
        self._scores: dict[tuple[str, tuple[str, ...]], dict[str, float | None]] = {}

    @property
    def metric_names(self) -> tuple[str, ...]:
        """The metrics `score` returns, in table order."""
        return ANSWER_METRICS + (JUDGE_METRICS if self.judge is not None else ())

    def answer(self, question: str, documents: Sequence[Document]) -> str:
        """The model's answer to `question` from `documents`, prompted as `QuestionAnswerAdvisor` does."""
        if documents:
            passages = "\n\n".join(format_document(i, d) for i, d in enumerate(documents, 1))
            text = DEFAULT_TEMPLATE.render(query=question, question_answer_context=passages)
        else:
            text = DEFAULT_EMPTY_TEMPLATE.render(query=question)
        # The question in metadata lets the extractive answerer read it without parsing the template.
        return self.model.call(Prompt([UserMessage(text, {"question": question})])).text

    def score(self, question: Question, documents: Sequence[Document]) -> dict[str, float | None]:
        """The answer metrics of `question` answered from `documents`; empty when it has no gold answer."""
        if question.answer is None:
            return {}
        key = (question.id, tuple(d.id for d in documents))
        cached = self._scores.get(key)
        if cached is not None:
            return cached
        answer = self.answer(question.text, documents)
        self.answers[key] = answer
        scores = score_answer(answer, question.answer, documents)
        if self.judge is not None:
            scores.update(self.judge.grade(question.text, answer, documents))
        self._scores[key] = scores
        return scores
