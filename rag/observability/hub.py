"""The instrumentation hub: where rag's code reports its steps, and what (if anything) listens.

The chain, the advisors that search stores, the embedders, the tool manager and the ingest pipeline all
report through this module. Nothing listens by default: `active()` is None and every call site skips its
tracing in one comparison, so rag costs nothing and imports nothing extra. `rag.observability.enable_tracing`
installs an OpenTelemetry backend (`rag.observability.otel`), the one implementation of `Instrumentation`.

The `observer=` callback of `ChatClient` is fed from the same steps (see `rag.advisors.observation`): a
step opens a span here when tracing is on, and its end becomes both an `ObservationEvent` and the span's
end, so the two views never disagree about what ran.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal, Protocol, TypeAlias

from rag.chat.messages import Usage

__all__ = [
    "AttributeValue",
    "Attributes",
    "Instrumentation",
    "SpanKind",
    "StepSpan",
    "active",
    "install",
]

AttributeValue: TypeAlias = str | bool | int | float | Sequence[str] | Sequence[int] | Sequence[float]
Attributes: TypeAlias = Mapping[str, AttributeValue]
SpanKind: TypeAlias = Literal["internal", "client"]


class StepSpan(Protocol):
    """One open span: made current around the synchronous parts of its step, ended once."""

    def attach(self) -> object:
        """Make this span the current one (parent of spans opened now); returns a token for `detach`."""
        ...

    def detach(self, token: object) -> None:
        """Undo the matching `attach`."""
        ...

    def set(self, attributes: Attributes) -> None:
        """Add attributes (values None are dropped by the caller)."""
        ...

    def event(self, name: str, attributes: Attributes) -> None:
        """Add a timestamped event."""
        ...

    def end(self, error: BaseException | None = None) -> None:
        """End the span; with `error`, mark it failed (the error's type only: messages may hold secrets)."""
        ...


class Instrumentation(Protocol):
    """What a tracing backend provides: spans, and the GenAI metrics."""

    capture_content: bool
    """Whether prompts, replies, queries and document text may be recorded (off unless the user opts in)."""

    def start(self, name: str, attributes: Attributes, kind: SpanKind = "internal") -> StepSpan:
        """Open a span, child of the current one."""
        ...

    def record_operation(self, seconds: float, usage: Usage | None, attributes: Attributes) -> None:
        """Record `gen_ai.client.operation.duration` and, with usage, `gen_ai.client.token.usage`."""
        ...


_active: Instrumentation | None = None


def active() -> Instrumentation | None:
    """The installed backend, or None when nothing traces (the default)."""
    return _active


def install(instrumentation: Instrumentation | None) -> Instrumentation | None:
    """Install `instrumentation` (None switches tracing off); returns the one it replaces."""
    global _active
    previous, _active = _active, instrumentation
    return previous
