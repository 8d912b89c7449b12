"""`RAG_OTEL` through the real entry point: spans to stderr, and OTLP/gRPC to a receiver on loopback."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

from tests.otlp_receiver import Receiver

Cli = Callable[..., Result]


def test_console_spans_go_to_stderr(cli: Cli, docs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert cli("ingest", docs, "--store", "numpy").exit_code == 0
    monkeypatch.setenv("RAG_OTEL", "console")
    result = cli("query", "keepers ledger", "--store", "numpy")
    assert result.exit_code == 0, result.stderr
    assert '"name": "query numpy"' in result.stderr and '"db.system.name": "numpy"' in result.stderr
    assert '"name"' not in result.stdout  # results stay clean for scripts


def test_otlp_export_reaches_a_collector(
    cli: Cli, docs: Path, monkeypatch: pytest.MonkeyPatch, receiver: tuple[Receiver, int]
) -> None:
    found, port = receiver
    monkeypatch.setenv("RAG_OTEL", "otlp")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_INSECURE", "true")
    monkeypatch.setenv("OTEL_SERVICE_NAME", "rag-test")
    assert cli("ingest", docs, "--store", "numpy").exit_code == 0
    result = cli("ask", "How often do the keepers rotate?", "--store", "numpy")
    assert result.exit_code == 0, result.stderr
    spans = {
        span.name: (resource.resource, span)
        for request in found.traces
        for resource in request.resource_spans
        for scope in resource.scope_spans
        for span in scope.spans
    }
    assert {"ingest", "chat_client call", "advisor QuestionAnswerAdvisor", "query numpy", "chat"} <= set(
        spans
    )
    resource, _ = spans["chat_client call"]
    service = {a.key: a.value.string_value for a in resource.attributes}["service.name"]
    assert service == "rag-test"
    names = {
        metric.name
        for request in found.metrics
        for resource in request.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
    }
    assert "gen_ai.client.operation.duration" in names


def test_unknown_rag_otel_value_is_a_usage_error(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAG_OTEL", "jaeger")
    result = cli("info")
    assert result.exit_code == 2
    assert "RAG_OTEL must be 'otlp', 'console' or 'off', got 'jaeger'" in result.stderr
