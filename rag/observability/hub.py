"""The instrumentation hub: where rag's code reports its steps, and what (if anything) listens.

The chain, the advisors that search stores, the embedders, the tool manager and the ingest pipeline all
report through this module. Nothing listens by default: `active()` is None and every call site skips its
tracing, so rag costs next to nothing and imports nothing extra. `rag.observability.enable_tracing`
installs an OpenTelemetry backend (`rag.observability.otel`), the one implementation of `Instrumentation`.

An application that configured OpenTelemetry itself (a global `TracerProvider`, set by its own code or by
`opentelemetry-instrument`) needs no call: `active()` notices the provider and installs the backend on
first use. It looks without importing anything: only when the application has already imported
`opentelemetry.trace` (found in `sys.modules`) does it ask that module for the global provider.
`disable_tracing()` switches this off too.

The `observer=` callback of `ChatClient` is fed from the same steps (see `rag.advisors.observation`): a
step opens a span here when tracing is on, and its end becomes both an `ObservationEvent` and the span's
end, so the two views never disagree about what ran.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Literal, Protocol, TypeAlias

from rag.chat.messages import Usage

__all__ = [
    "AttributeValue",
    "Attributes",
    "Instrumentation",
    "SpanKind",
    "StepSpan",
    "active",
    "configured_provider",
    "install",
    "set_auto_detect",
    "set_backend_factory",
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
_auto_detect = True
_backend_factory: Callable[[], Instrumentation] | None = None
_UNKNOWN = object()


def configured_provider() -> object | None:
    """The application's global OpenTelemetry `TracerProvider`, if it set one; never imports OpenTelemetry.

    None when `opentelemetry.trace` was never imported, or when the global provider is still the API's
    placeholder (a proxy or a no-op provider: nothing was configured).
    """
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:
        return None
    # The API keeps the global provider in `_TRACER_PROVIDER` (None until set). Reading it is ~20x cheaper
    # than `get_tracer_provider()`, and this runs at every step while OpenTelemetry is imported (chromadb
    # imports it) but not configured. Another API version without the attribute gets the public call.
    provider = getattr(trace, "_TRACER_PROVIDER", _UNKNOWN)
    if provider is None:
        return None
    if provider is _UNKNOWN:
        provider = trace.get_tracer_provider()
    placeholders = (trace.ProxyTracerProvider, trace.NoOpTracerProvider)
    return None if isinstance(provider, placeholders) else provider


def active() -> Instrumentation | None:
    """The installed backend; or, when the application configured a global OpenTelemetry provider, the
    backend installed for it now; else None (the default)."""
    if _active is not None or not _auto_detect:
        return _active
    if _backend_factory is None or configured_provider() is None:
        return None
    install(_backend_factory())
    return _active


def set_backend_factory(factory: Callable[[], Instrumentation] | None) -> None:
    """What `active()` installs for a provider the application configured (`rag.observability` sets the
    OpenTelemetry backend over the global providers; this module imports no backend itself)."""
    global _backend_factory
    _backend_factory = factory


def set_auto_detect(enabled: bool) -> None:
    """Whether `active()` may install tracing for an OpenTelemetry provider the application configured."""
    global _auto_detect
    _auto_detect = enabled


def install(instrumentation: Instrumentation | None) -> Instrumentation | None:
    """Install `instrumentation` (None switches tracing off); returns the one it replaces."""
    global _active
    previous, _active = _active, instrumentation
    return previous
