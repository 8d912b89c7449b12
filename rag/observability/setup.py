"""Tracing for the command line, switched on by environment variables.

`RAG_OTEL=otlp` sends spans and metrics over OTLP/gRPC to `OTEL_EXPORTER_OTLP_ENDPOINT` (default
`http://localhost:4317`, where a local collector, Jaeger or Grafana's otel-lgtm image listens);
`RAG_OTEL=console` writes each finished span as JSON to stderr. `RAG_OTEL_CAPTURE_CONTENT=1` also records
prompts, replies and queries. The service name is `OTEL_SERVICE_NAME`, else `rag`. The standard
`OTEL_EXPORTER_OTLP_*` variables (headers, TLS, timeouts) are read by the exporter itself.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping

from rag.errors import ConfigError
from rag.observability import OTEL_HINT, disable_tracing, enable_tracing

__all__ = ["tracing_from_env"]

_OFF = ("", "0", "off", "none", "false", "no")
_ON = ("1", "true", "yes", "on")


def tracing_from_env(environ: Mapping[str, str] | None = None) -> Callable[[], None] | None:
    """Configure tracing as `RAG_OTEL` says; returns the function that flushes and stops it, or None.

    Raises:
        ConfigError: an unknown `RAG_OTEL` value, or the OpenTelemetry SDK missing.
    """
    env = os.environ if environ is None else environ
    kind = env.get("RAG_OTEL", "").strip().lower()
    if kind in _OFF:
        return None
    if kind not in ("otlp", "console"):
        raise ConfigError(f"RAG_OTEL must be 'otlp', 'console' or 'off', got {env['RAG_OTEL']!r}")
    try:
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import MetricReader, PeriodicExportingMetricReader
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
    except ImportError as exc:
        raise ConfigError(f"RAG_OTEL={kind} needs OpenTelemetry: {OTEL_HINT}") from exc
    resource = Resource.create({"service.name": env.get("OTEL_SERVICE_NAME") or "rag"})
    tracer_provider = TracerProvider(resource=resource)
    readers: list[MetricReader] = []
    if kind == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        # stderr: stdout carries the command's results, which scripts parse.
        tracer_provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=sys.stderr)))
    else:
        try:
            from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
        except ImportError as exc:
            raise ConfigError(
                f'RAG_OTEL=otlp needs the OTLP exporter: pip install "rag-advisors[otel]" ({exc})'
            ) from exc
        tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        readers.append(PeriodicExportingMetricReader(OTLPMetricExporter()))
    meter_provider = MeterProvider(resource=resource, metric_readers=readers)
    capture = env.get("RAG_OTEL_CAPTURE_CONTENT", "").strip().lower() in _ON
    enable_tracing(tracer_provider=tracer_provider, meter_provider=meter_provider, capture_content=capture)

    def shutdown() -> None:
        # Flushes what is batched: a short command would otherwise exit before its spans leave.
        disable_tracing()
        tracer_provider.shutdown()
        meter_provider.shutdown()

    return shutdown
