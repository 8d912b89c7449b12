"""The OpenTelemetry backend: rag's steps as spans, model and embedding calls as GenAI metrics.

Imported only by `enable_tracing`, so `import rag` never loads OpenTelemetry. Spans are parented through
OpenTelemetry's own context (a step is attached around each synchronous piece of its work, including each
`next()` of a stream), so a span the application opened around a client call, an HTTP request for
instance, becomes the parent of the client's span.
"""

from __future__ import annotations

from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import metrics, trace
from opentelemetry.trace import SpanKind as OtelSpanKind
from opentelemetry.trace import Status, StatusCode

from rag.chat.messages import Usage
from rag.observability.hub import Attributes, SpanKind

__all__ = ["DURATION_METRIC", "TOKEN_USAGE_METRIC", "OtelInstrumentation", "OtelSpan"]

SCOPE = "rag-advisors"
TOKEN_USAGE_METRIC = "gen_ai.client.token.usage"
DURATION_METRIC = "gen_ai.client.operation.duration"

# The bucket boundaries the GenAI semantic conventions advise for these two histograms.
_TOKEN_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864)
_DURATION_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)
# Attributes of a span that metrics keep: low-cardinality ones only.
_METRIC_KEYS = (
    "gen_ai.operation.name",
    "gen_ai.provider.name",
    "gen_ai.system",
    "gen_ai.request.model",
    "gen_ai.response.model",
    "error.type",
)


class OtelSpan:
    """A `StepSpan` over an OpenTelemetry span."""

    __slots__ = ("_context", "span")

    def __init__(self, span: trace.Span) -> None:
        self.span = span
        self._context: otel_context.Context | None = None

    def attach(self) -> object:
        # Built once: a stream attaches its span around every chunk.
        if self._context is None:
            self._context = trace.set_span_in_context(self.span)
        return otel_context.attach(self._context)

    def detach(self, token: object) -> None:
        otel_context.detach(token)  # type: ignore[arg-type]

    def set(self, attributes: Attributes) -> None:
        self.span.set_attributes(attributes)

    def event(self, name: str, attributes: Attributes) -> None:
        self.span.add_event(name, attributes)

    def end(self, error: BaseException | None = None) -> None:
        if error is not None:
            kind = type(error).__qualname__
            # The type, never str(error): a vendor's message may quote a request, a key or a document.
            self.span.set_attribute("error.type", kind)
            self.span.set_status(Status(StatusCode.ERROR, kind))
        self.span.end()


class OtelInstrumentation:
    """The `Instrumentation` that writes to an OpenTelemetry tracer and meter.

    Example:
        >>> from opentelemetry.sdk.trace import TracerProvider  # doctest: +SKIP
        >>> OtelInstrumentation(tracer_provider=TracerProvider())  # doctest: +SKIP
    """

    def __init__(
        self,
        *,
        tracer_provider: trace.TracerProvider | None = None,
        meter_provider: metrics.MeterProvider | None = None,
        capture_content: bool = False,
    ) -> None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            own_version: str | None = version("rag-advisors")
        except PackageNotFoundError:  # running from a source tree that was never installed
            own_version = None
        self.capture_content = capture_content
        self.tracer = trace.get_tracer(SCOPE, own_version, tracer_provider=tracer_provider)
        meter = metrics.get_meter(SCOPE, own_version or "", meter_provider=meter_provider)
        self.token_usage = meter.create_histogram(
            TOKEN_USAGE_METRIC,
            unit="{token}",
            description="Number of input and output tokens used",
            explicit_bucket_boundaries_advisory=list(_TOKEN_BUCKETS),
        )
        self.duration = meter.create_histogram(
            DURATION_METRIC,
            unit="s",
            description="GenAI operation duration",
            explicit_bucket_boundaries_advisory=list(_DURATION_BUCKETS),
        )

    def start(self, name: str, attributes: Attributes, kind: SpanKind = "internal") -> OtelSpan:
        span_kind = OtelSpanKind.CLIENT if kind == "client" else OtelSpanKind.INTERNAL
        return OtelSpan(self.tracer.start_span(name, kind=span_kind, attributes=attributes))

    def record_operation(self, seconds: float, usage: Usage | None, attributes: Attributes) -> None:
        labels: dict[str, Any] = {k: attributes[k] for k in _METRIC_KEYS if k in attributes}
        self.duration.record(seconds, labels)
        if usage is not None:
            self.token_usage.record(usage.prompt_tokens, {**labels, "gen_ai.token.type": "input"})
            self.token_usage.record(usage.completion_tokens, {**labels, "gen_ai.token.type": "output"})

    def __repr__(self) -> str:
        return f"OtelInstrumentation(capture_content={self.capture_content!r})"
