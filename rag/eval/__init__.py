"""Retrieval evaluation: labelled questions, document-level metrics, and sweeps over search settings.

Example:
    >>> from rag.eval import evaluate, load_questions  # doctest: +SKIP
    >>> results = evaluate(store, load_questions("data/questions.jsonl"), top_k=[1, 5, 10])  # doctest: +SKIP
    >>> print(results.table())  # doctest: +SKIP
"""

from rag.eval.metrics import METRICS, score_ranking
from rag.eval.questions import Question, QuestionSet, Relevant, load_beir, load_questions, parse_questions
from rag.eval.results import EvalResults, QuestionResult, SettingResult
from rag.eval.sweep import QUESTION_FILTER, evaluate

__all__ = [
    "METRICS",
    "QUESTION_FILTER",
    "EvalResults",
    "Question",
    "QuestionResult",
    "QuestionSet",
    "Relevant",
    "SettingResult",
    "evaluate",
    "load_beir",
    "load_questions",
    "parse_questions",
    "score_ranking",
]
