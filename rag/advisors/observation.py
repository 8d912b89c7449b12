"""Observability: each advisor step's own time, each model call's time, usage sums, an observer hook.

Every step of the chain is timed with `time.perf_counter`. An advisor's time is its *own* time: what it
spent before and after handing the request on, without the steps after it (so the numbers add up to the
request's total). The results land in the request context (`rag.timings`, `rag.usage`, `rag.model_calls`);
each step also becomes an `ObservationEvent` for the `observer=` callback of `ChatClient`, and a DEBUG line
on the `rag.client` logger.

Example:
    >>> events = []
    >>> observation = Observation({}, events.append, "call")
    >>> observation.record("advisor", "Logger", 0.001)
    >>> events[0].name, observation.context["rag.timings"][0].name
    ('Logger', 'Logger')
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, TypeAlias

from rag.advisors.request import MODEL_CALLS, TIMINGS, USAGE
from rag.chat.messages import Usage
from rag.observability.hub import StepSpan

__all__ = ["EventKind", "Observation", "ObservationEvent", "Observer", "Timing"]

logger = logging.getLogger("rag.client")

EventKind: TypeAlias = Literal["advisor", "model", "request"]


class Timing(NamedTuple):
    """One step's time: an advisor (its own time) or a model call (`model:call`, `model:stream`)."""

    name: str
    seconds: float


@dataclass(frozen=True)
class ObservationEvent:
    """What happened in one step, or (kind "request") in the whole request.

    `seconds` is the step's own time, or the request's total; `usage` is the model call's usage, or the sum
    over the request; `error` is the exception that ended the step, if any; `context` is the request's.

    Example:
        >>> ObservationEvent("model", "model:call", "call", 0.25, Usage(3, 2, 5)).usage.total_tokens
        5
    """

    kind: EventKind
    name: str
    mode: Literal["call", "stream"]
    seconds: float
    usage: Usage | None = None
    error: BaseException | None = None
    context: Mapping[str, Any] = field(default_factory=dict, repr=False)


Observer: TypeAlias = Callable[[ObservationEvent], None]
"""A callback receiving every `ObservationEvent`; exceptions it raises propagate to the caller."""


class Observation:
    """The recorder of one request: timings and usage into the context, events to the observer.

    The chain brackets every step with `enter()` and `leave()`; nested steps add their time to a running
    "child time" so each step's own time can be told apart from the steps it called.
    """

    __slots__ = ("_child", "bound", "context", "mode", "observer", "timings")

    def __init__(
        self, context: dict[str, Any] | None, observer: Observer | None, mode: Literal["call", "stream"]
    ) -> None:
        self.observer = observer
        self.mode: Literal["call", "stream"] = mode
        self.context: dict[str, Any] = {}
        self.timings: list[Timing] = []
        self.bound = False
        if context is not None:
            self.bind(context)
        self._child = 0.0

    def bind(self, context: dict[str, Any]) -> None:
        """Record into `context` (the request's) from now on."""
        timings = context.get(TIMINGS)
        if not isinstance(timings, list):
            timings = context[TIMINGS] = []
        self.timings = timings
        context.setdefault(USAGE, Usage())
        context.setdefault(MODEL_CALLS, 0)
        self.context = context
        self.bound = True

    def enter(self) -> float:
        """Start a step; returns the enclosing step's child time, to give back to `leave`."""
        saved = self._child
        self._child = 0.0
        return saved

    def leave(self, saved: float, elapsed: float) -> float:
        """End a step that took `elapsed` seconds in all; returns its own time."""
        own = elapsed - self._child
        self._child = saved + elapsed
        return own

    def record(
        self,
        kind: EventKind,
        name: str,
        seconds: float,
        *,
        usage: Usage | None = None,
        error: BaseException | None = None,
        span: StepSpan | None = None,
    ) -> None:
        """Keep a step's time (and a model call's usage) in the context, then report the event.

        The same event ends the step's span, when tracing is on (see `rag.observability`): the observer,
        the log line and the trace all come from this one place.
        """
        if kind != "request":
            self.timings.append(Timing(name, seconds))
        if kind == "model":
            self.context[MODEL_CALLS] = self.context.get(MODEL_CALLS, 0) + 1
            if usage is not None:
                self.context[USAGE] = self.context.get(USAGE, Usage()) + usage
        elif kind == "request":
            usage = self.context.get(USAGE)
        if span is not None:  # ended first, so an observer that raises cannot leave it open
            if kind == "request" and usage is not None:
                span.set(
                    {
                        "gen_ai.usage.input_tokens": usage.prompt_tokens,
                        "gen_ai.usage.output_tokens": usage.completion_tokens,
                    }
                )
            span.end(error)
        if self.observer is not None:
            self.observer(ObservationEvent(kind, name, self.mode, seconds, usage, error, self.context))
        if logger.isEnabledFor(logging.DEBUG):
            outcome = f" failed with {type(error).__name__}" if error is not None else ""
            logger.debug("%s %s %r took %.3f ms%s", self.mode, kind, name, seconds * 1000, outcome)
