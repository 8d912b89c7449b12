"""The spans of rag's steps: their names and attributes, one function per kind of step.

Names and attributes follow the OpenTelemetry GenAI semantic conventions where one exists (model calls,
tool calls, embeddings) and use the `rag.` prefix otherwise. Prompt text, replies, search queries and
document text are recorded only when the backend's `capture_content` is on.

Every function here starts with `active()`: when nothing traces, it does nothing else.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from time import perf_counter
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

from rag.chat.messages import ChatResponse, Prompt, ToolCall
from rag.observability.hub import StepSpan, active

if TYPE_CHECKING:
    from rag.documents import Document, SearchRequest


class Searchable(Protocol):
    """What `traced_search` needs of a store; every `rag.vectorstore.VectorStore` has it.

    A protocol of its own, so this package (which embedders import) does not depend on the store layer.
    """

    def similarity_search(self, request: SearchRequest) -> list[Document]: ...


__all__ = [
    "Searchable",
    "advisor_span",
    "client_span",
    "end_model_span",
    "model_span",
    "provider_of",
    "store_kind",
    "tool_span",
    "traced_embedding",
    "traced_search",
]

F = TypeVar("F", bound=Callable[..., Any])


def _clean(attributes: dict[str, Any]) -> dict[str, Any]:
    """Attributes without None values (OpenTelemetry rejects them) and with tuples as lists."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in attributes.items() if v is not None}


def client_span(mode: Literal["call", "stream"], advisors: Sequence[str]) -> StepSpan | None:
    """The span of one `ChatClient` request, parent of its advisors' and model calls' spans."""
    backend = active()
    if backend is None:
        return None
    return backend.start(
        f"chat_client {mode}", {"rag.client.mode": mode, "rag.client.advisors": list(advisors)}
    )


def advisor_span(name: str, order: int) -> StepSpan | None:
    """The span of one advisor's turn in the chain."""
    backend = active()
    if backend is None:
        return None
    return backend.start(f"advisor {name}", {"rag.advisor.name": name, "rag.advisor.order": order})


def provider_of(model: object) -> str:
    """The GenAI provider name of a chat or embedding model: its `provider` attribute, or from its class."""
    provider = getattr(model, "provider", None)
    if isinstance(provider, str) and provider:
        return provider
    name = type(model).__name__
    if "OpenAI" in name:
        return "openai"
    for suffix in ("ChatModel", "Embedding", "Model"):
        name = name.removesuffix(suffix)
    return name.lower() or "unknown"


def _messages(prompt: Prompt) -> str:
    return json.dumps(
        [{"role": m.role, "parts": [{"type": "text", "content": m.text or ""}]} for m in prompt.messages]
    )


def model_span(model: object, prompt: Prompt, mode: Literal["call", "stream"]) -> StepSpan | None:
    """The span of one model call (GenAI `chat` operation); end it with `end_model_span`."""
    backend = active()
    if backend is None:
        return None
    options = prompt.options
    requested = options.model if options is not None and options.model else getattr(model, "model", None)
    requested = requested if isinstance(requested, str) else None
    provider = provider_of(model)
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": provider,
        "gen_ai.system": provider,  # the older name of gen_ai.provider.name, still read by many backends
        "gen_ai.request.model": requested,
        "gen_ai.request.temperature": options.temperature if options is not None else None,
        "gen_ai.request.max_tokens": options.max_tokens if options is not None else None,
        "gen_ai.request.top_p": options.top_p if options is not None else None,
        "rag.model.mode": mode,
    }
    if backend.capture_content:
        attributes["gen_ai.input.messages"] = _messages(prompt)
    name = f"chat {requested}" if requested else "chat"
    return backend.start(name, _clean(attributes), kind="client")


def end_model_span(
    span: StepSpan,
    response: ChatResponse | None,
    seconds: float,
    error: BaseException | None,
    *,
    text: str | None = None,
) -> None:
    """Close a model call's span with the reply's attributes and record the GenAI metrics."""
    backend = active()
    attributes: dict[str, Any] = {}
    usage = response.usage if response is not None else None
    if response is not None:
        attributes["gen_ai.response.model"] = response.model
        if response.finish_reason:
            attributes["gen_ai.response.finish_reasons"] = [response.finish_reason]
        if usage is not None:
            attributes["gen_ai.usage.input_tokens"] = usage.prompt_tokens
            attributes["gen_ai.usage.output_tokens"] = usage.completion_tokens
        if backend is not None and backend.capture_content:
            reply = response.text if text is None else text
            parts = [{"type": "text", "content": reply}]
            attributes["gen_ai.output.messages"] = json.dumps([{"role": "assistant", "parts": parts}])
    attributes = _clean(attributes)
    span.set(attributes)
    if backend is not None:
        labels = {**_span_attributes(span), **attributes}
        if error is not None:
            labels["error.type"] = type(error).__qualname__
        backend.record_operation(seconds, usage, labels)
    span.end(error)


def _span_attributes(span: StepSpan) -> dict[str, Any]:
    # The request-side attributes the span started with (an SDK span exposes them; others may not).
    inner = getattr(span, "span", None)
    found = getattr(inner, "attributes", None)
    return dict(found) if found else {}


@contextmanager
def tool_span(call: ToolCall) -> Iterator[StepSpan | None]:
    """A span around one tool execution (GenAI `execute_tool`), current while the tool runs."""
    backend = active()
    if backend is None:
        yield None
        return
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": call.name,
        "gen_ai.tool.call.id": call.id,
        "gen_ai.tool.type": "function",
    }
    if backend.capture_content:
        attributes["gen_ai.tool.call.arguments"] = call.arguments
    span = backend.start(f"execute_tool {call.name}", _clean(attributes))
    token = span.attach()
    error: BaseException | None = None
    try:
        yield span
    except BaseException as exc:
        error = exc
        raise
    finally:
        span.detach(token)
        span.end(error)


def store_kind(store: object) -> str:
    """A short name for a store's family: its `kind`, or from its class (`chroma`, `numpy`, `pgvector`)."""
    kind = getattr(store, "kind", None)
    if isinstance(kind, str) and kind:
        return kind
    return type(store).__name__.removesuffix("VectorStore").removesuffix("Store").lower() or "store"


def traced_search(store: Searchable, request: SearchRequest) -> list[Document]:
    """`store.similarity_search(request)` inside a store-query span (kind, mode, top-k, filter, hits)."""
    backend = active()
    if backend is None:
        return store.similarity_search(request)
    kind = store_kind(store)
    attributes: dict[str, Any] = {
        "db.system.name": kind,
        "db.operation.name": "query",
        "db.vector.query.top_k": request.top_k,
        "rag.search.mode": request.mode,
        "rag.search.similarity_threshold": request.similarity_threshold,
        "rag.search.filter": str(request.filter) if request.filter is not None else None,
        "db.collection.name": getattr(store, "collection_name", None),
    }
    if request.mode == "hybrid":
        attributes["rag.search.fusion"] = request.fusion
    if backend.capture_content:
        attributes["rag.search.query"] = request.query
    span = backend.start(f"query {kind}", _clean(attributes), kind="client")
    token = span.attach()
    error: BaseException | None = None
    try:
        hits = store.similarity_search(request)
        span.set({"rag.search.hits": len(hits)})
        return hits
    except BaseException as exc:
        error = exc
        raise
    finally:
        span.detach(token)
        span.end(error)


def traced_embedding(embed: F) -> F:
    """Decorate an embedding model's `embed(self, texts)` with a GenAI `embeddings` span and metrics."""

    @functools.wraps(embed)
    def wrapper(self: Any, texts: Sequence[str], *args: Any, **kwargs: Any) -> Any:
        backend = active()
        if backend is None:
            return embed(self, texts, *args, **kwargs)
        name = getattr(self, "name", None)
        provider = provider_of(self)
        attributes = _clean(
            {
                "gen_ai.operation.name": "embeddings",
                "gen_ai.provider.name": provider,
                "gen_ai.system": provider,
                "gen_ai.request.model": name if isinstance(name, str) else None,
                "rag.embedding.inputs": len(texts),
            }
        )
        span = backend.start(f"embeddings {name}" if name else "embeddings", attributes, kind="client")
        token = span.attach()
        start = perf_counter()
        error: BaseException | None = None
        try:
            vectors = embed(self, texts, *args, **kwargs)
            span.set({"gen_ai.embeddings.dimension.count": int(vectors.shape[1]) if vectors.ndim == 2 else 0})
            return vectors
        except BaseException as exc:
            error = exc
            raise
        finally:
            span.detach(token)
            labels = dict(attributes)
            if error is not None:
                labels["error.type"] = type(error).__qualname__
            backend.record_operation(perf_counter() - start, None, labels)
            span.end(error)

    return wrapper  # type: ignore[return-value]  # same signature as `embed`


R = TypeVar("R")


def traced_ingest(paths: Sequence[object], run: Callable[[], R]) -> R:
    """`run()` (an ingest run returning its report) inside an `ingest` span, one event per file.

    The file events are added when the run ends, from its report (source, status, chunk counts, reason),
    so they carry the run's end time; the span's attributes sum the run up.
    """
    backend = active()
    if backend is None:
        return run()
    span = backend.start("ingest", {"rag.ingest.paths": len(paths)})
    token = span.attach()
    error: BaseException | None = None
    try:
        report = run()
        _report_ingest(span, report)
        return report
    except BaseException as exc:
        error = exc
        raise
    finally:
        span.detach(token)
        span.end(error)


def _report_ingest(span: StepSpan, report: object) -> None:
    for file in getattr(report, "files", ()):
        span.event(
            "ingest.file",
            _clean(
                {
                    "rag.ingest.source": getattr(file, "source", None),
                    "rag.ingest.status": getattr(file, "status", None),
                    "rag.ingest.chunks": getattr(file, "chunks", None),
                    "rag.ingest.embedded": getattr(file, "embedded", None),
                    "rag.ingest.reason": getattr(file, "reason", None),
                }
            ),
        )
    counts = getattr(report, "counts", {})
    summary = {f"rag.ingest.files.{status}": n for status, n in counts.items()}
    summary["rag.ingest.chunks_written"] = getattr(report, "chunks_written", 0)
    span.set(_clean(summary))
