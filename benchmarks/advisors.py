"""The advisor chain's own overhead per advisor per call.

A `FakeChatModel` answers every request with the same reply, so what is measured is the client and the
chain: building the request and the chain, running N pass-through advisors, timing each step, and the
model call bookkeeping. The 0-advisor run is the baseline; the table shows the per-call time and the cost
each advisor adds, for `call()` and for `stream()` (a 3-chunk reply), as the fastest of many short batches
(robust to load from other processes), plus a least-squares slope over all counts.
Target: <= 20 us per advisor per call.

With `--tracing on` (or `both`, the default) the same runs are repeated with OpenTelemetry tracing on:
the SDK's `TracerProvider` with a span processor in front of an exporter that does nothing, and the
SDK's `MeterProvider`, so what is measured is rag's instrumentation and the SDK's span bookkeeping (each
advisor is one span), not an exporter's I/O. `--processor simple` (the default) exports inline as each
span ends; `batch` queues spans for a background thread, which on 2 busy cores costs more, not less.
Tracing off and on take turns within each repeat. Needs the `otel` extra.

Run: python benchmarks/advisors.py [--iterations 300] [--repeats 40] [--tracing off|on|both]
     [--processor batch|simple]
"""

from __future__ import annotations

import argparse
import gc
from collections.abc import Callable, Sequence
from functools import partial
from time import perf_counter

from rag.advisors import BaseAdvisor
from rag.client import ChatClient
from rag.observability.hub import Instrumentation, install
from rag.testing import FakeChatModel

COUNTS = (0, 1, 2, 5, 10)


class PassThrough(BaseAdvisor):
    """An advisor that changes nothing (inherits `before` and `after`)."""


def _call(client: ChatClient) -> str:
    return client.prompt("q").call().content()


def _stream(client: ChatClient) -> list[str]:
    return list(client.prompt("q").stream().content())


def _per_call(run: Callable[[], object], model: FakeChatModel, iterations: int) -> float:
    """Seconds per call over `iterations` calls."""
    model.prompts.clear()  # the fake records every prompt; keep memory flat between runs
    start = perf_counter()
    for _ in range(iterations):
        run()
    return (perf_counter() - start) / iterations


def measure(
    iterations: int, repeats: int, backends: Sequence[Instrumentation | None]
) -> list[list[tuple[int, float, float]]]:
    """For each tracing backend (None: off), (advisors, s per call, s per streamed call), best of `repeats`.

    Counts and backends take turns within each repeat, so a burst of load from other processes hits them
    all alike and the on/off comparison stays fair on a busy machine.
    """
    clients = []
    for count in COUNTS:
        model = FakeChatModel(default="a fixed reply")
        clients.append((model, ChatClient(model, advisors=[PassThrough(name=f"p{i}") for i in range(count)])))
    best_call = [[float("inf")] * len(COUNTS) for _ in backends]
    best_stream = [[float("inf")] * len(COUNTS) for _ in backends]
    try:
        for _ in range(repeats):
            for i, (model, client) in enumerate(clients):
                for b, backend in enumerate(backends):
                    install(backend)
                    gc.collect()
                    call = _per_call(partial(_call, client), model, iterations)
                    stream = _per_call(partial(_stream, client), model, iterations)
                    best_call[b][i] = min(best_call[b][i], call)
                    best_stream[b][i] = min(best_stream[b][i], stream)
    finally:
        install(None)
    return [list(zip(COUNTS, best_call[b], best_stream[b], strict=True)) for b in range(len(backends))]


def _noop_tracing(processor: str) -> Instrumentation:
    """Tracing through the OpenTelemetry SDK into an exporter that drops every span (not installed yet).

    `processor` is the SDK's span processor in front of it: "simple" (exported inline as each span ends)
    or "batch" (queued, and exported by a background thread, as deployments usually do).
    """
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        SimpleSpanProcessor,
        SpanExporter,
        SpanExportResult,
    )

    from rag.observability.otel import OtelInstrumentation

    class NoopExporter(SpanExporter):
        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    exporter = NoopExporter()
    provider.add_span_processor(
        BatchSpanProcessor(exporter) if processor == "batch" else SimpleSpanProcessor(exporter)
    )
    return OtelInstrumentation(tracer_provider=provider, meter_provider=MeterProvider())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=40)
    parser.add_argument("--tracing", choices=("off", "on", "both"), default="both")
    parser.add_argument("--processor", choices=("batch", "simple"), default="simple")
    args = parser.parse_args()
    labels = {"off": ["tracing off"], "on": ["tracing on"], "both": ["tracing off", "tracing on"]}[
        args.tracing
    ]
    backends = [None if label == "tracing off" else _noop_tracing(args.processor) for label in labels]
    for label, rows in zip(labels, measure(args.iterations, args.repeats, backends), strict=True):
        if label == "tracing on":
            label += f" (OpenTelemetry SDK, {args.processor} processor, no-op exporter)"
        report(label, rows, args.iterations, args.repeats)


def report(label: str, rows: list[tuple[int, float, float]], iterations: int, repeats: int) -> None:
    """Print one table: per-call time and per-advisor cost for each advisor count."""
    base_call, base_stream = rows[0][1], rows[0][2]
    print(f"{label}: {iterations} requests x best of {repeats}; FakeChatModel, pass-through advisors")
    print(f"{'advisors':>8} {'call us':>9} {'us/advisor':>11} {'stream us':>10} {'us/advisor':>11}")
    for count, call, stream in rows:
        per_call = f"{(call - base_call) / count * 1e6:11.2f}" if count else f"{'-':>11}"
        per_stream = f"{(stream - base_stream) / count * 1e6:11.2f}" if count else f"{'-':>11}"
        print(f"{count:>8} {call * 1e6:9.2f} {per_call} {stream * 1e6:10.2f} {per_stream}")
    worst = max((call - base_call) / count for count, call, _ in rows if count) * 1e6
    call_slope, stream_slope = _slope(rows, 1) * 1e6, _slope(rows, 2) * 1e6
    print(f"least-squares slope: call {call_slope:.2f} us/advisor, stream {stream_slope:.2f} us/advisor")
    verdict = "meets" if worst <= 20 else "MISSES"
    print(f"worst per-advisor overhead (call): {worst:.2f} us -> {verdict} the 20 us target")


def _slope(rows: list[tuple[int, float, float]], column: int) -> float:
    """Seconds per advisor fitted over every count: steadier than any single difference under load."""
    xs = [row[0] for row in rows]
    ys = [row[column] for row in rows]
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    covariance = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True))
    return covariance / sum((x - mean_x) ** 2 for x in xs)


if __name__ == "__main__":
    main()
