"""The outcome of a sweep: one row per (mode, filter, threshold, top-k) setting, and per-question scores.

Example:
    >>> row = SettingResult("none", 0.0, 5, 2, {m: 0.5 for m in METRICS}, 1.0, 2.0, mode="hybrid")
    >>> results = EvalResults((row,), ())
    >>> results.table().splitlines()[0].split()[:5]
    ['mode', 'filter', 'thr', 'k', 'n']
    >>> results.table().splitlines()[1].split()[:5]
    ['hybrid', 'none', '0', '5', '2']
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rag.errors import ConfigError
from rag.eval.metrics import METRICS
from rag.eval.plotting import plot_results

if TYPE_CHECKING:
    import pandas
    from matplotlib.figure import Figure

__all__ = ["EvalResults", "QuestionResult", "SettingResult"]

_NOTEBOOKS_HINT = 'pip install "rag-advisors[notebooks]"'


@dataclass(frozen=True)
class SettingResult:
    """Mean metrics of one setting over its questions, with the search latency of its mode and filter.

    Example:
        >>> r = SettingResult("none", 0.3, 10, 74, {"recall": 0.9}, 0.4, 1.1, mode="lexical")
        >>> r.to_dict()["mode"], r.to_dict()["recall"]
        ('lexical', 0.9)
    """

    filter: str
    threshold: float
    top_k: int
    questions: int
    metrics: dict[str, float]
    latency_p50_ms: float
    latency_p95_ms: float
    mode: str = "vector"
    answers: dict[str, float | None] = field(default_factory=dict)
    """Mean answer metrics over the questions with a gold answer (None: applies to none of them)."""

    def to_dict(self) -> dict[str, Any]:
        """A flat record: setting, question count, each metric, latencies, then the answer metrics."""
        return {
            "mode": self.mode,
            "filter": self.filter,
            "threshold": self.threshold,
            "top_k": self.top_k,
            "questions": self.questions,
            **self.metrics,
            "p50_ms": self.latency_p50_ms,
            "p95_ms": self.latency_p95_ms,
            **self.answers,
        }


@dataclass(frozen=True)
class QuestionResult:
    """The metrics of one question under one setting.

    Example:
        >>> QuestionResult("none", 0.0, 5, "q7", {"recall": 1.0}).to_dict()["question"]
        'q7'
    """

    filter: str
    threshold: float
    top_k: int
    question: str
    metrics: dict[str, float]
    mode: str = "vector"
    answers: dict[str, float | None] = field(default_factory=dict)
    """The answer metrics (empty when the question has no gold answer or answers were not scored)."""

    def to_dict(self) -> dict[str, Any]:
        """A flat record: setting, question id, each metric, then the answer metrics."""
        return {
            "mode": self.mode,
            "filter": self.filter,
            "threshold": self.threshold,
            "top_k": self.top_k,
            "question": self.question,
            **self.metrics,
            **self.answers,
        }


_SHORT_HEADERS: dict[str, str] = {
    "threshold": "thr",
    "top_k": "k",
    "questions": "n",
    "hit_rate": "hit",
    "answer_contains": "contains",
    "answer_f1": "f1",
    "cited_answer": "cited",
    "quotes_grounded": "grounded",
    "faithfulness": "faithful",
    "relevance": "relevant",
}
"""The header `EvalResults.table()` prints for a record name that is longer than its numbers."""

_FULL_ONLY = frozenset({"precision", "map", "p95_ms"})
"""Columns only `EvalResults.table(full=True)` prints (precision falls as 1/k once the answer is found;
MAP follows recall and MRR)."""


def _cell(name: str, value: Any) -> str:
    if value is None:
        return "-"
    if name == "threshold":
        return f"{value:g}"
    if isinstance(value, float):
        return f"{value:.2f}" if name.endswith("_ms") else f"{value:.3f}"
    return str(value)


@dataclass(frozen=True)
class EvalResults:
    """Rows of a sweep, printable, exportable and plottable.

    Example:
        >>> results = evaluate(store, load_questions("data/questions.jsonl"))  # doctest: +SKIP
        >>> print(results.table())  # doctest: +SKIP
        >>> results.plot("eval.png")  # doctest: +SKIP
        >>> results.to_dataframe().sort_values("ndcg").tail(3)  # doctest: +SKIP
    """

    rows: tuple[SettingResult, ...]
    per_question: tuple[QuestionResult, ...] = ()
    answer_metrics: tuple[str, ...] = ()
    """The answer metric columns, when answers were generated and scored."""
    judge: str | None = None
    """The name of the judge whose `faithfulness` and `relevance` scores the rows hold."""

    def records(self) -> list[dict[str, Any]]:
        """One flat dict per setting (see `SettingResult.to_dict`)."""
        return [row.to_dict() for row in self.rows]

    def table(self, *, full: bool = False) -> str:
        """The rows as an aligned text table (metrics with three decimals, latencies in ms).

        By default the table fits about 100 columns: short headers and the setting,
        hit rate, recall, MRR, nDCG, median latency and every answer metric. `full` prints every
        column under its record name (precision, MAP and the 95th percentile latency too), as the
        JSON and CSV exports hold them. Answer metrics, when scored, follow the latencies; `-` marks
        one that applied to no question.
        """
        records = self.records()
        names = [
            "mode", "filter", "threshold", "top_k", "questions", *METRICS, "p50_ms", "p95_ms",
            *self.answer_metrics,
        ]  # fmt: skip
        if not full:
            names = [name for name in names if name not in _FULL_ONLY]
        header = names if full else [_SHORT_HEADERS.get(name, name) for name in names]
        cells = [header, *([_cell(name, record.get(name)) for name in names] for record in records)]
        widths = [max(len(line[i]) for line in cells) for i in range(len(header))]
        lines = []
        for line in cells:
            # The mode and filter columns are text: left-aligned; numbers line up on the right.
            parts = [
                c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(line, widths, strict=True))
            ]
            lines.append("  ".join(parts).rstrip())
        return "\n".join(lines)

    def to_json(self, *, per_question: bool = False, indent: int | None = 2) -> str:
        """The rows (and the per-question scores, when asked) as JSON."""
        payload: dict[str, Any] = {"metrics": list(METRICS), "settings": self.records()}
        if self.answer_metrics:
            payload["answer_metrics"] = list(self.answer_metrics)
            payload["judge"] = self.judge
        if per_question:
            payload["questions"] = [r.to_dict() for r in self.per_question]
        return json.dumps(payload, indent=indent)

    def to_csv(self, path: str | os.PathLike[str] | None = None) -> str:
        """The rows as CSV text; also written to `path` when given."""
        buffer = io.StringIO()
        writer = csv.DictWriter(
            buffer,
            fieldnames=list(self.records()[0]) if self.rows else ["mode", "filter"],
            lineterminator="\n",
        )
        writer.writeheader()
        writer.writerows(self.records())
        text = buffer.getvalue()
        if path is not None:
            with open(path, "w", encoding="utf-8", newline="") as handle:
                handle.write(text)
        return text

    def to_dataframe(self, *, per_question: bool = False) -> pandas.DataFrame:
        """The rows (or the per-question scores) as a pandas DataFrame.

        Raises:
            ConfigError: pandas is not installed.
        """
        try:
            import pandas as pd
        except ImportError as exc:
            raise ConfigError(f"EvalResults.to_dataframe needs pandas: {_NOTEBOOKS_HINT}") from exc
        records = [r.to_dict() for r in self.per_question] if per_question else self.records()
        return pd.DataFrame.from_records(records)

    def settings(self) -> list[tuple[str, str, float]]:
        """The distinct (mode, filter, threshold) triples, in row order: one plotted line each."""
        return list(dict.fromkeys((row.mode, row.filter, row.threshold) for row in self.rows))

    def plot(
        self, path: str | os.PathLike[str] | None = None, metrics: Sequence[str] | None = None
    ) -> Figure:
        """Each metric against k, one line per (mode, filter, threshold); saved to `path` when given.

        By default recall and nDCG, plus answer containment and token F1 when answers were scored.

        Draws on a standalone matplotlib `Figure` (Agg canvas), so it needs no display and leaves
        pyplot's global state alone. In a notebook, the returned figure displays itself.

        Raises:
            ConfigError: matplotlib is not installed.
            InvalidRequestError: an unknown metric name.
        """
        if metrics is None:
            answers = [m for m in ("answer_contains", "answer_f1") if m in self.answer_metrics]
            metrics = ("recall", "ndcg", *answers)
        return plot_results(self, path, metrics)
