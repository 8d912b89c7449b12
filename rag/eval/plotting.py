"""Drawing sweep results with matplotlib, on a standalone Agg figure (no display, no pyplot state)."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from rag.errors import InvalidRequestError, MissingDependencyError
from rag.eval.metrics import METRICS

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["PlotRow", "Plottable", "plot_results"]


class PlotRow(Protocol):
    """What a plot reads of one result row (`rag.eval.results.SettingResult` has it)."""

    @property
    def mode(self) -> str: ...
    @property
    def filter(self) -> str: ...
    @property
    def threshold(self) -> float: ...
    @property
    def top_k(self) -> int: ...
    @property
    def metrics(self) -> Mapping[str, float]: ...
    @property
    def answers(self) -> Mapping[str, float | None]: ...


class Plottable(Protocol):
    """What a plot reads of a sweep's results (`rag.eval.results.EvalResults` has it)."""

    @property
    def rows(self) -> Sequence[PlotRow]: ...
    @property
    def answer_metrics(self) -> Sequence[str]: ...
    def settings(self) -> list[tuple[str, str, float]]: ...


_STYLES = ("-", "--", ":", "-.")
_MARKERS = ("o", "s", "^", "D")
_NAMES = {
    "hit_rate": "hit rate",
    "recall": "recall",
    "precision": "precision",
    "mrr": "MRR",
    "ndcg": "nDCG",
    "map": "MAP",
    "answer_contains": "answer contains gold",
    "answer_f1": "answer token F1",
    "cited_answer": "cited passage holds gold",
    "quotes_grounded": "quotes grounded",
    "faithfulness": "faithfulness (judge)",
    "relevance": "relevance (judge)",
}


def _line_label(
    mode: str, filter_label: str, threshold: float, modes: int, filters: int, thresholds: int
) -> str:
    names = {"none": "no filter", "question": "each question's filter"}
    parts = [mode] if modes > 1 else []
    if thresholds > 1 or (filters == 1 and modes == 1):
        parts.append(f"threshold {threshold:g}")
    if filters > 1:
        parts.append(names.get(filter_label, f"filter: {filter_label}"))
    return ", ".join(parts)


def _value(row: PlotRow, metric: str) -> float:
    value = row.metrics[metric] if metric in row.metrics else row.answers.get(metric)
    return math.nan if value is None else value  # a gap in the line: the metric applied to no question


def plot_results(
    results: Plottable,
    path: str | os.PathLike[str] | None = None,
    metrics: Sequence[str] = ("recall", "ndcg"),
) -> Figure:
    """One panel per metric (value@k against k), one line per (mode, filter, threshold); saved to `path`.

    Raises:
        ConfigError: matplotlib is not installed.
        InvalidRequestError: an unknown metric, or no rows to draw.
    """
    known = (*METRICS, *results.answer_metrics)
    unknown = [m for m in metrics if m not in known]
    if unknown or not metrics:
        raise InvalidRequestError(f"metrics to plot must be among {', '.join(known)}; got {list(metrics)!r}")
    if not results.rows:
        raise InvalidRequestError("no results to plot")
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise MissingDependencyError(
            'EvalResults.plot needs matplotlib: pip install "rag-advisors[notebooks]"',
            package="matplotlib",
            extra="notebooks",
        ) from exc
    settings = results.settings()
    modes = list(dict.fromkeys(m for m, _, _ in settings))
    filters = list(dict.fromkeys(f for _, f, _ in settings))
    thresholds = list(dict.fromkeys(t for _, _, t in settings))
    colours = list(dict.fromkeys((m, t) for m, _, t in settings))
    figure = Figure(figsize=(5.0 * len(metrics), 4.0), layout="constrained")
    FigureCanvasAgg(figure)  # attaches itself: savefig then renders without any GUI backend
    axes = figure.subplots(1, len(metrics), squeeze=False)[0]
    for ax, metric in zip(axes, metrics, strict=True):
        for mode, filter_label, threshold in settings:
            rows = sorted(
                (
                    r
                    for r in results.rows
                    if (r.mode, r.filter, r.threshold) == (mode, filter_label, threshold)
                ),
                key=lambda r: r.top_k,
            )
            # Colour tells modes and thresholds apart, line style filters, the marker modes again:
            # a grid of settings stays readable.
            ax.plot(
                [r.top_k for r in rows],
                [_value(r, metric) for r in rows],
                marker=_MARKERS[modes.index(mode) % len(_MARKERS)],
                color=f"C{colours.index((mode, threshold)) % 10}",
                linestyle=_STYLES[filters.index(filter_label) % len(_STYLES)],
                label=_line_label(mode, filter_label, threshold, len(modes), len(filters), len(thresholds)),
            )
        name = _NAMES.get(metric, metric)
        ax.set_title(f"{name}@k")
        ax.set_xlabel("k (chunks retrieved)")
        ax.set_ylabel(f"mean {name}@k")
        ax.set_ylim(-0.02, 1.02)
        ax.set_xticks(sorted({r.top_k for r in results.rows}))
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small", loc="best")
    if path is not None:
        figure.savefig(os.fspath(path), dpi=110)
    return figure
