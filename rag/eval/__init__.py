"""Evaluation: labelled questions, retrieval metrics, answer metrics, an LLM judge, and sweeps.

Example:
    >>> from rag.eval import evaluate, load_questions  # doctest: +SKIP
    >>> results = evaluate(store, load_questions("data/questions.jsonl"), top_k=[1, 5, 10])  # doctest: +SKIP
    >>> print(results.table())  # doctest: +SKIP
    >>> answers = evaluate(store, questions, top_k=[3], answerer=ExtractiveChatModel())  # doctest: +SKIP
    >>> print(tune(store, questions, top_k=10).table())  # best mode and vector weight  # doctest: +SKIP
"""

from rag.eval.answering import AnswerScorer
from rag.eval.answers import ANSWER_METRICS, answer_contains, normalize_answer, score_answer, token_f1
from rag.eval.judge import JUDGE_METRICS, JUDGE_TEMPLATE_PATH, LLMJudge
from rag.eval.metrics import METRICS, score_ranking
from rag.eval.query_cache import QueryEmbeddingCache
from rag.eval.questions import Question, QuestionSet, Relevant, load_beir, load_questions, parse_questions
from rag.eval.results import EvalResults, QuestionResult, SettingResult
from rag.eval.sweep import QUESTION_FILTER, evaluate
from rag.eval.tune import DEFAULT_TUNE_WEIGHTS, TuneResult, TuneRow, tune

__all__ = [
    "ANSWER_METRICS",
    "DEFAULT_TUNE_WEIGHTS",
    "JUDGE_METRICS",
    "JUDGE_TEMPLATE_PATH",
    "METRICS",
    "QUESTION_FILTER",
    "AnswerScorer",
    "EvalResults",
    "LLMJudge",
    "QueryEmbeddingCache",
    "Question",
    "QuestionResult",
    "QuestionSet",
    "Relevant",
    "SettingResult",
    "TuneResult",
    "TuneRow",
    "answer_contains",
    "evaluate",
    "load_beir",
    "load_questions",
    "normalize_answer",
    "parse_questions",
    "score_answer",
    "score_ranking",
    "token_f1",
    "tune",
]
