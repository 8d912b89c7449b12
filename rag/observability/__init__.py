"""Tracing and metrics: every ChatClient request, advisor, model call, tool call, store query, embedding
call and ingest run as OpenTelemetry spans, with the GenAI token-usage and duration histograms.

Optional: install the `otel` extra (`pip install "rag-advisors[otel]"`) and call `enable_tracing()`; or
configure OpenTelemetry in the application (a global `TracerProvider`) and rag's spans join its traces
without a call. Until one of the two happens nothing of OpenTelemetry is imported and each instrumented
step costs a few comparisons. The `observer=` callback of `ChatClient` needs no extra and is fed by the
same steps.

Example:
    >>> from opentelemetry.sdk.trace import TracerProvider  # doctest: +SKIP
    >>> from opentelemetry.sdk.trace.export import SimpleSpanProcessor, ConsoleSpanExporter  # doctest: +SKIP
    >>> provider = TracerProvider()  # doctest: +SKIP
    >>> provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter()))  # doctest: +SKIP
    >>> enable_tracing(tracer_provider=provider)  # doctest: +SKIP
    >>> ChatClient(model, advisors=[qa]).prompt("How?").call().content()  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

from rag.errors import ConfigError
from rag.observability.hub import Instrumentation, active, install, set_auto_detect, set_backend_factory

__all__ = ["Instrumentation", "disable_tracing", "enable_tracing", "tracing_enabled"]

OTEL_HINT = 'pip install "rag-advisors[otel]"'


def enable_tracing(
    *, tracer_provider: Any = None, meter_provider: Any = None, capture_content: bool = False
) -> Instrumentation:
    """Send rag's spans and GenAI metrics to OpenTelemetry, from now on, in this process.

    Args:
        tracer_provider: an OpenTelemetry `TracerProvider`; by default the global one (set it up, or
            run under `opentelemetry-instrument`, for spans to go anywhere).
        meter_provider: an OpenTelemetry `MeterProvider`; by default the global one.
        capture_content: also record prompts, replies, tool arguments and search queries. Off by default:
            traces often leave the machine, and these can hold personal or confidential text.

    Returns:
        The installed instrumentation (pass `None` to `rag.observability.hub.install` to remove it, or
        call `disable_tracing()`).

    Raises:
        ConfigError: the `otel` extra (opentelemetry-api and -sdk) is not installed.
    """
    try:
        from rag.observability.otel import OtelInstrumentation
    except ImportError as exc:
        raise ConfigError(f"tracing needs OpenTelemetry: {OTEL_HINT} ({exc})") from exc
    instrumentation = OtelInstrumentation(
        tracer_provider=tracer_provider, meter_provider=meter_provider, capture_content=capture_content
    )
    install(instrumentation)
    set_auto_detect(True)  # after disable_tracing: an explicit call switches it back on
    return instrumentation


def _global_backend() -> Instrumentation:
    """The backend for an OpenTelemetry set-up the application made: its global providers."""
    from rag.observability.otel import OtelInstrumentation

    return OtelInstrumentation()


set_backend_factory(_global_backend)


def disable_tracing() -> None:
    """Stop tracing, and stop following an OpenTelemetry provider the application configured."""
    set_auto_detect(False)
    install(None)


def tracing_enabled() -> bool:
    """Whether rag traces: `enable_tracing` is in effect, or the application configured a provider."""
    return active() is not None
