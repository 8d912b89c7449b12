"""OpenTelemetry spans and metrics of client calls, streams, failures and ingest runs (in-memory SDK)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from ingest.pipeline import IngestPipeline
from ingest.splitters import RecursiveSplitter
from rag import Document, HashingEmbedding
from rag.advisors import QuestionAnswerAdvisor, VectorStoreChatMemoryAdvisor
from rag.client import ChatClient
from rag.errors import ModelError
from rag.http import RetryPolicy
from rag.models.openai import OpenAIChatModel
from rag.observability import disable_tracing, enable_tracing, tracing_enabled
from rag.tools import tool
from stores import NumpyVectorStore
from tests.openai_server import OpenAIServer, Reply, chunk, completion, sse

KEY = "sk-trace-5ecret-key"
QUESTION = "When is the harbour beacon lit?"
DOC_TEXT = "The harbour beacon is lit at dusk by the keeper."


class Traces:
    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        self.meters = MeterProvider(metric_readers=[self.reader])

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def by_name(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.spans() if s.name == name]

    def one(self, name: str) -> ReadableSpan:
        [span] = self.by_name(name)
        return span

    def children(self, parent: ReadableSpan) -> list[str]:
        """The names of `parent`'s children, in start order."""
        kids = [
            s for s in self.spans() if s.parent is not None and s.parent.span_id == parent.context.span_id
        ]
        return [s.name for s in sorted(kids, key=lambda s: s.start_time or 0)]

    def metric_points(self, name: str) -> list[Any]:
        data = self.reader.get_metrics_data()
        assert data is not None
        return [
            point
            for resource in data.resource_metrics
            for scope in resource.scope_metrics
            for metric in scope.metrics
            if metric.name == name
            for point in metric.data.data_points
        ]


@pytest.fixture
def traces() -> Iterator[Traces]:
    found = Traces()
    enable_tracing(tracer_provider=found.provider, meter_provider=found.meters)
    yield found
    disable_tracing()


@pytest.fixture
def model(openai_server: OpenAIServer) -> Iterator[OpenAIChatModel]:
    policy = RetryPolicy(max_retries=0, sleep=lambda _s: None)
    with OpenAIChatModel(
        base_url=openai_server.base_url, api_key=KEY, model="test-model", timeout=5.0, retry_policy=policy
    ) as chat:
        yield chat


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _stores() -> tuple[NumpyVectorStore, NumpyVectorStore]:
    docs = NumpyVectorStore(HashingEmbedding())
    docs.add([Document("d1", DOC_TEXT, {"source": "beacon.md"})])
    return docs, NumpyVectorStore(HashingEmbedding())


def _every_value(spans: list[ReadableSpan]) -> str:
    """Every attribute, event and status text of the spans, as one string to search."""
    parts: list[str] = []
    for span in spans:
        parts.append(json.dumps(dict(span.attributes or {}), default=str))
        parts.extend(json.dumps(dict(e.attributes or {}), default=str) + e.name for e in span.events)
        parts.append(span.status.description or "")
    return "\n".join(parts)


def _tool_call_reply() -> Reply:
    call = {"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a": 2, "b": 2}'}}
    return Reply(json=completion(None, tool_calls=[call], finish_reason="tool_calls", usage=(30, 7)))


def test_call_with_qa_memory_and_a_tool_round(
    traces: Traces, openai_server: OpenAIServer, model: OpenAIChatModel
) -> None:
    docs, memory = _stores()
    openai_server.enqueue(_tool_call_reply(), Reply(json=completion("At dusk [1].", usage=(40, 4))))
    client = ChatClient(
        model, advisors=[VectorStoreChatMemoryAdvisor(memory), QuestionAnswerAdvisor(docs)], tools=[add]
    )
    assert client.prompt(QUESTION).advisors(conversation_id="c1").call().content() == "At dusk [1]."

    root = traces.one("chat_client call")
    assert root.parent is None
    assert root.attributes is not None and list(root.attributes["rag.client.advisors"]) == [
        "VectorStoreChatMemoryAdvisor",
        "QuestionAnswerAdvisor",
        "ToolCallAdvisor",
    ]
    assert (root.attributes["gen_ai.usage.input_tokens"], root.attributes["gen_ai.usage.output_tokens"]) == (
        70,
        11,
    )
    assert traces.children(root) == ["advisor VectorStoreChatMemoryAdvisor"]
    memory_span = traces.one("advisor VectorStoreChatMemoryAdvisor")
    # The question embedded once for recall and retrieval, recall (a store query), the rest of the
    # chain, then the turn written back.
    assert traces.children(memory_span) == [
        f"embeddings {memory.embedding.name}",
        "query numpy",
        "advisor QuestionAnswerAdvisor",
        f"embeddings {memory.embedding.name}",
    ]
    qa = traces.one("advisor QuestionAnswerAdvisor")
    assert traces.children(qa) == ["query numpy", "advisor ToolCallAdvisor"]
    tool_advisor = traces.one("advisor ToolCallAdvisor")
    assert traces.children(tool_advisor) == ["chat test-model", "execute_tool add", "chat test-model"]

    first, second = sorted(traces.by_name("chat test-model"), key=lambda s: s.start_time or 0)
    assert first.kind == trace.SpanKind.CLIENT
    attributes = dict(first.attributes or {})
    assert attributes["gen_ai.operation.name"] == "chat"
    assert attributes["gen_ai.provider.name"] == attributes["gen_ai.system"] == "openai"
    assert attributes["gen_ai.request.model"] == attributes["gen_ai.response.model"] == "test-model"
    assert (attributes["gen_ai.usage.input_tokens"], attributes["gen_ai.usage.output_tokens"]) == (30, 7)
    assert list(attributes["gen_ai.response.finish_reasons"]) == ["tool_calls"]
    assert list((second.attributes or {})["gen_ai.response.finish_reasons"]) == ["stop"]

    tool_span = traces.one("execute_tool add")
    assert (tool_span.attributes or {})["gen_ai.tool.name"] == "add"
    assert (tool_span.attributes or {})["gen_ai.tool.call.id"] == "c1"

    qa_query = [
        s for s in traces.by_name("query numpy") if s.parent and s.parent.span_id == qa.context.span_id
    ]
    query = dict(qa_query[0].attributes or {})
    assert (query["db.system.name"], query["rag.search.mode"], query["db.vector.query.top_k"]) == (
        "numpy",
        "vector",
        4,
    )
    assert query["rag.search.hits"] == 1
    memory_query = dict(
        next(s for s in traces.by_name("query numpy") if s is not qa_query[0]).attributes or {}
    )
    # Memory recall reads only the turns the memory advisor marked, of this conversation.
    assert memory_query["rag.search.filter"] == "('rag:kind' == 'chat_memory') AND (conversation_id == 'c1')"
    assert traces.children(qa_query[0]) == []  # the question's vector came from the memory advisor

    # No prompt, reply, query or document text, and no key, unless the user opts in.
    every = _every_value(traces.spans())
    for secret in (QUESTION, DOC_TEXT, "At dusk", KEY):
        assert secret not in every

    tokens = traces.metric_points("gen_ai.client.token.usage")
    by_type = {p.attributes["gen_ai.token.type"]: p for p in tokens}
    assert by_type["input"].sum == 70 and by_type["output"].sum == 11
    assert by_type["input"].attributes["gen_ai.request.model"] == "test-model"
    durations = traces.metric_points("gen_ai.client.operation.duration")
    chat_points = [p for p in durations if p.attributes["gen_ai.operation.name"] == "chat"]
    assert sum(p.count for p in chat_points) == 2
    assert any(p.attributes["gen_ai.operation.name"] == "embeddings" for p in durations)


def test_opting_in_records_the_prompt_and_the_reply(
    openai_server: OpenAIServer, model: OpenAIChatModel
) -> None:
    found = Traces()
    enable_tracing(tracer_provider=found.provider, meter_provider=found.meters, capture_content=True)
    try:
        docs, _ = _stores()
        openai_server.enqueue(Reply(json=completion("At dusk.")))
        ChatClient(model, advisors=[QuestionAnswerAdvisor(docs)]).prompt(QUESTION).call().content()
    finally:
        disable_tracing()
    chat = dict(found.one("chat test-model").attributes or {})
    assert QUESTION in str(chat["gen_ai.input.messages"]) and DOC_TEXT in str(chat["gen_ai.input.messages"])
    assert json.loads(str(chat["gen_ai.output.messages"]))[0]["parts"][0]["content"] == "At dusk."
    assert (found.one("query numpy").attributes or {})["rag.search.query"] == QUESTION
    assert KEY not in _every_value(found.spans())


def test_stream_spans_nest_and_do_not_leak_into_the_caller(
    traces: Traces, openai_server: OpenAIServer, model: OpenAIChatModel
) -> None:
    docs, _ = _stores()
    events = [chunk("At "), chunk("dusk."), chunk(finish_reason="stop"), chunk(usage=(12, 3))]
    openai_server.enqueue(Reply(body=sse(events), headers={"content-type": "text/event-stream"}))
    client = ChatClient(model, advisors=[QuestionAnswerAdvisor(docs)])
    tracer = traces.provider.get_tracer("app")
    seen_current: list[bool] = []
    with tracer.start_as_current_span("app request") as app:
        stream = client.prompt(QUESTION).stream().content()
        for _text in stream:
            # Between chunks the caller's own span is current: the chain's spans never stay attached.
            seen_current.append(
                trace.get_current_span().get_span_context().span_id == app.get_span_context().span_id
            )
    assert seen_current and all(seen_current)
    root = traces.one("chat_client stream")
    assert root.parent is not None and root.parent.span_id == traces.one("app request").context.span_id
    assert traces.children(root) == ["advisor QuestionAnswerAdvisor"]
    qa = traces.one("advisor QuestionAnswerAdvisor")
    assert traces.children(qa) == ["query numpy", "chat test-model"]
    chat = dict(traces.one("chat test-model").attributes or {})
    assert chat["rag.model.mode"] == "stream"
    assert (chat["gen_ai.usage.input_tokens"], chat["gen_ai.usage.output_tokens"]) == (12, 3)
    assert list(chat["gen_ai.response.finish_reasons"]) == ["stop"]
    assert all(s.status.status_code != StatusCode.ERROR for s in traces.spans())


def test_a_failing_model_call_marks_its_spans_and_leaks_no_secret(
    traces: Traces, openai_server: OpenAIServer, model: OpenAIChatModel
) -> None:
    docs, _ = _stores()
    # Providers echo (part of) a rejected key in the error body; the spans must not carry it on.
    openai_server.enqueue(
        Reply(status=401, json={"error": {"message": f"Incorrect API key provided: {KEY}"}})
    )
    client = ChatClient(model, advisors=[QuestionAnswerAdvisor(docs)])
    with pytest.raises(ModelError):
        client.prompt(QUESTION).call().content()
    chat = traces.one("chat test-model")
    assert chat.status.status_code == StatusCode.ERROR
    assert (chat.attributes or {})["error.type"] == "ModelError"
    for name in ("advisor QuestionAnswerAdvisor", "chat_client call"):
        assert traces.one(name).status.status_code == StatusCode.ERROR
    assert traces.one("query numpy").status.status_code != StatusCode.ERROR
    every = _every_value(traces.spans())
    assert KEY not in every and "Incorrect API key" not in every and QUESTION not in every
    [point] = [
        p
        for p in traces.metric_points("gen_ai.client.operation.duration")
        if p.attributes["gen_ai.operation.name"] == "chat"
    ]
    assert point.attributes["error.type"] == "ModelError" and point.count == 1
    assert traces.metric_points("gen_ai.client.token.usage") == []


def test_ingest_run_is_a_span_with_one_event_per_file(traces: Traces, tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("# Beacon\n\nThe beacon is lit at dusk.\n", encoding="utf-8")
    (folder / "b.txt").write_text("Valves open at dawn.\n", encoding="utf-8")
    (folder / "broken.pdf").write_bytes(b"not a pdf at all")
    store = NumpyVectorStore(HashingEmbedding())
    report = IngestPipeline(store, RecursiveSplitter(200, 20)).run([folder])
    span = traces.one("ingest")
    events = {str((e.attributes or {})["rag.ingest.source"]): e for e in span.events}
    assert len(events) == len(report.files) == 3
    statuses = {Path(source).name: (e.attributes or {})["rag.ingest.status"] for source, e in events.items()}
    assert statuses == {"a.md": "new", "b.txt": "new", "broken.pdf": "failed"}
    attributes = dict(span.attributes or {})
    assert attributes["rag.ingest.files.new"] == 2 and attributes["rag.ingest.files.failed"] == 1
    assert attributes["rag.ingest.chunks_written"] == report.chunks_written > 0
    assert traces.children(span) == [f"embeddings {store.embedding.name}"]


def test_disable_tracing_stops_spans(traces: Traces) -> None:
    from rag.testing import FakeChatModel

    assert tracing_enabled()
    disable_tracing()
    assert not tracing_enabled()
    ChatClient(FakeChatModel(default="ok")).prompt("q").call().content()
    assert traces.spans() == []


def test_the_observer_and_the_spans_report_the_same_steps(traces: Traces) -> None:
    from rag.advisors import BaseAdvisor
    from rag.client import ObservationEvent
    from rag.testing import FakeChatModel

    events: list[ObservationEvent] = []
    model = FakeChatModel([RuntimeError("model down"), ["a", "b"]])
    client = ChatClient(
        model, advisors=[BaseAdvisor(name="first"), BaseAdvisor(name="second")], observer=events.append
    )
    with pytest.raises(RuntimeError):
        client.prompt("q").call().content()
    assert "".join(client.prompt("q").stream().content()) == "ab"
    observed = [(e.kind, e.name, e.error is not None) for e in events]
    assert observed == [
        ("model", "model:call", True), ("advisor", "second", True), ("advisor", "first", True),
        ("request", "request", True),
        ("model", "model:stream", False), ("advisor", "second", False), ("advisor", "first", False),
        ("request", "request", False),
    ]  # fmt: skip
    spans = sorted(traces.spans(), key=lambda s: s.end_time or 0)
    assert [(s.name, s.status.status_code == StatusCode.ERROR) for s in spans] == [
        ("chat", True), ("advisor second", True), ("advisor first", True), ("chat_client call", True),
        ("chat", False), ("advisor second", False), ("advisor first", False), ("chat_client stream", False),
    ]  # fmt: skip


def test_a_failing_tool_is_marked_on_its_span(traces: Traces) -> None:
    from rag.chat import AssistantMessage, ToolCall
    from rag.testing import FakeChatModel

    @tool
    def explode(reason: str) -> str:
        """Always fails."""
        raise OSError(f"disk full: {reason}")

    ask = AssistantMessage(tool_calls=[ToolCall("c9", "explode", '{"reason": "secret-path"}')])
    client = ChatClient(FakeChatModel([ask, "Sorry."]), tools=[explode])
    assert client.prompt("go").call().content() == "Sorry."
    span = traces.one("execute_tool explode")
    assert (span.attributes or {})["error.type"] == "tool_error"
    assert "secret-path" not in _every_value(traces.spans())  # arguments are content: not recorded


def test_a_stream_the_reader_abandons_still_ends_every_span(traces: Traces) -> None:
    from rag.advisors import BaseAdvisor
    from rag.testing import FakeChatModel

    client = ChatClient(FakeChatModel([["one ", "two ", "three"]]), advisors=[BaseAdvisor(name="outer")])
    chunks = client.prompt("count").stream().content()
    assert next(chunks) == "one "
    chunks.close()  # type: ignore[attr-defined]  # a generator: the reader stops early
    names = sorted(s.name for s in traces.spans())
    assert names == ["advisor outer", "chat", "chat_client stream"]
    assert all(s.status.status_code != StatusCode.ERROR for s in traces.spans())
    assert trace.get_current_span() is trace.INVALID_SPAN  # nothing left attached in the caller


def _tree(traces: Traces) -> list[tuple[str, str | None]]:
    """Every span as (name, parent's name), sorted; then the exporter is emptied for the next run."""
    spans = traces.spans()
    names = {span.context.span_id: span.name for span in spans}
    tree = sorted(
        ((s.name, names.get(s.parent.span_id) if s.parent is not None else None) for s in spans),
        key=lambda pair: (pair[0], pair[1] or ""),
    )
    traces.exporter.clear()
    return tree


@pytest.mark.parametrize("mode", ["call", "stream"])
def test_async_requests_give_the_same_span_tree_as_sync_ones(
    traces: Traces, openai_server: OpenAIServer, model: OpenAIChatModel, mode: str
) -> None:
    import asyncio

    streamed = sse([chunk("At dusk."), chunk(finish_reason="stop"), chunk(usage=(9, 3))])
    reply = (
        Reply(body=streamed, headers={"Content-Type": "text/event-stream"})
        if mode == "stream"
        else Reply(json=completion("At dusk."))
    )
    openai_server.enqueue(reply, reply)

    def fresh_client() -> ChatClient:  # the same empty memory for both runs, so the same steps run
        docs, memory = _stores()
        advisors = [VectorStoreChatMemoryAdvisor(memory), QuestionAnswerAdvisor(docs)]
        client = ChatClient(model, advisors=advisors)
        traces.exporter.clear()
        return client

    def sync_run() -> None:
        spec = fresh_client().prompt(QUESTION).advisors(conversation_id="c1")
        if mode == "stream":
            assert "".join(spec.stream().content()) == "At dusk."
        else:
            assert spec.call().content() == "At dusk."

    async def async_run() -> None:
        spec = fresh_client().prompt(QUESTION).advisors(conversation_id="c1")
        if mode == "stream":
            assert "".join([text async for text in spec.astream()]) == "At dusk."
        else:
            assert await spec.acall().content() == "At dusk."
        await model.aclose()

    sync_run()
    synced = _tree(traces)
    asyncio.run(async_run())
    assert _tree(traces) == synced
    assert (f"chat_client {mode}", None) in synced
    assert ("advisor QuestionAnswerAdvisor", "advisor VectorStoreChatMemoryAdvisor") in synced
    assert ("chat test-model", "advisor QuestionAnswerAdvisor") in synced
