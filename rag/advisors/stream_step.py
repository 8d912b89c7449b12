"""The bookkeeping of one streamed step of the chain: its times over the chunks, its span, its summary."""

from __future__ import annotations

from time import perf_counter

from rag.advisors.observation import EventKind, Observation
from rag.chat.messages import AssistantMessage, ChatResponse, Usage
from rag.observability.hub import StepSpan
from rag.observability.steps import end_model_span

__all__ = ["StreamStep", "StreamSummary"]


class StreamStep:
    """The bookkeeping of one streamed step: its own and total time over the chunks, and its span."""

    __slots__ = ("observation", "own", "saved", "span", "started", "summary", "token", "total")

    def __init__(
        self, observation: Observation, span: StepSpan | None, summary: StreamSummary | None
    ) -> None:
        self.observation = observation
        self.span = span
        self.summary = summary
        self.own = self.total = self.saved = self.started = 0.0
        self.token: object = None

    def resume(self) -> None:
        """Before each next(): the span becomes current and the clock runs."""
        if self.span is not None:
            self.token = self.span.attach()
        self.saved = self.observation.enter()
        self.started = perf_counter()

    def pause(self) -> None:
        """After each next(): the time is added and the caller's context comes back."""
        elapsed = perf_counter() - self.started
        self.total += elapsed
        self.own += self.observation.leave(self.saved, elapsed)
        if self.span is not None:
            self.span.detach(self.token)

    def finish(self, kind: EventKind, name: str, error: BaseException | None) -> None:
        """Report the step once the stream ended (the model's span with what its chunks said)."""
        span, summary = self.span, self.summary
        if span is not None and summary is not None:
            end_model_span(span, summary.response(), self.total, error, text=summary.text())
            span = None
        usage = summary.usage if summary is not None else None
        self.observation.record(kind, name, self.own, usage=usage, error=error, span=span)


class StreamSummary:
    """What a model span reports of a stream: the last usage, finish reason and model seen, and the text."""

    __slots__ = ("finish_reason", "model", "parts", "usage")

    def __init__(self) -> None:
        self.usage: Usage | None = None
        self.finish_reason: str | None = None
        self.model: str | None = None
        self.parts: list[str] = []

    def add(self, chunk: ChatResponse) -> None:
        self.usage = chunk.usage or self.usage
        self.finish_reason = chunk.finish_reason or self.finish_reason
        self.model = chunk.model or self.model
        if chunk.message.text:
            self.parts.append(chunk.message.text)

    def text(self) -> str:
        return "".join(self.parts)

    def response(self) -> ChatResponse:
        return ChatResponse(AssistantMessage(None), self.finish_reason, self.usage, self.model)
