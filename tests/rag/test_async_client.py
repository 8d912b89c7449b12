"""The async API: concurrency against a loopback upstream, cancellation, async models and stores."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest
from pydantic import BaseModel

from rag.advisors import BaseAdvisor, MessageChatMemoryAdvisor
from rag.chat import Prompt
from rag.client import ChatClient
from rag.documents import Document, SearchRequest
from rag.embeddings import HashingEmbedding
from rag.errors import InvalidRequestError, ModelError
from rag.http import RetryPolicy
from rag.memory import MessageWindowChatMemory
from rag.models import OpenAIChatModel
from rag.testing import FakeChatModel
from rag.vectorstore import aadd, asimilarity_search
from stores import NumpyVectorStore
from tests.openai_server import OpenAIServer, RecordedRequest, Reply, chunk, completion, sse, stream_reply
from tests.rag.slow_stream_server import SlowStreamServer


class _Overlap:
    """Counts requests in flight at the upstream, answering each after `delay` seconds."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.current = 0
        self.peak = 0
        self._lock = threading.Lock()

    def __call__(self, request: RecordedRequest) -> Reply:
        with self._lock:
            self.current += 1
            self.peak = max(self.peak, self.current)
        time.sleep(self.delay)
        with self._lock:
            self.current -= 1
        question = request.json["messages"][-1]["content"]
        return Reply(json=completion(f"answer to {question}"))


def test_fifty_concurrent_acalls_overlap_at_the_upstream(openai_server: OpenAIServer) -> None:
    overlap = _Overlap(0.1)
    openai_server.default = overlap
    model = OpenAIChatModel(base_url=openai_server.base_url, api_key="k", model="m")
    client = ChatClient(model)

    async def main() -> tuple[list[str], float]:
        start = time.perf_counter()
        try:
            texts = await asyncio.gather(*(client.prompt(f"q{i}").acall().content() for i in range(50)))
        finally:
            await model.aclose()
        return list(texts), time.perf_counter() - start

    texts, elapsed = asyncio.run(main())
    model.close()
    assert texts == [f"answer to q{i}" for i in range(50)]
    # Overlap is counted at the upstream, not timed: a sync loop would never have two requests in flight.
    assert overlap.peak >= 10, (overlap.peak, elapsed)


def test_cancelling_a_stream_closes_its_upstream_connection() -> None:
    upstream = SlowStreamServer()
    model = OpenAIChatModel(base_url=upstream.base_url, api_key="k", model="slow")
    client = ChatClient(model)
    received: list[str] = []

    async def read() -> None:
        async for text in client.prompt("go on").astream():
            received.append(text)

    async def main() -> None:
        task = asyncio.create_task(read())
        while not received:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await model.aclose()

    try:
        asyncio.run(main())
        assert upstream.closed.wait(5), "the upstream never saw the connection close"
        assert not upstream.finished.is_set()
    finally:
        upstream.close()
        model.close()


def test_breaking_out_of_a_stream_closes_its_upstream_connection() -> None:
    upstream = SlowStreamServer()
    model = OpenAIChatModel(base_url=upstream.base_url, api_key="k", model="slow")

    async def main() -> str:
        spec = ChatClient(model).prompt("go on").astream()
        first = ""
        async for text in spec:
            first = text
            break
        await model.aclose()
        return first

    try:
        assert asyncio.run(main()) == "w0 "
        assert upstream.closed.wait(5)
    finally:
        upstream.close()
        model.close()


class _SyncRecorder:
    """A sync-only advisor (bridged from a thread in async requests) that records completed calls."""

    name, order = "sync-recorder", 0

    def __init__(self) -> None:
        self.completed: list[str] = []

    def advise_call(self, request: Any, chain: Any) -> Any:
        response = chain.next_call(request)
        self.completed.append(response.text)
        return response


@pytest.mark.parametrize("bridged", [True, False])
def test_cancelling_an_acall_stops_the_upstream_and_records_nothing(bridged: bool) -> None:
    upstream = SlowStreamServer()
    model = OpenAIChatModel(base_url=upstream.base_url, api_key="k", model="slow")
    memory = MessageWindowChatMemory()
    recorder = _SyncRecorder()
    advisors: list[Any] = [MessageChatMemoryAdvisor(memory)] + ([recorder] if bridged else [])
    client = ChatClient(model, advisors=advisors)

    async def main() -> None:
        task = asyncio.create_task(client.prompt("hi").advisors(conversation_id="c1").acall().content())
        while not upstream.opened.is_set():
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await model.aclose()

    try:
        asyncio.run(main())
        assert upstream.closed.wait(5)
        assert memory.get("c1") == []
        assert recorder.completed == []
    finally:
        upstream.close()
        model.close()


def test_openai_acall_and_astream_match_the_sync_paths(openai_server: OpenAIServer) -> None:
    body = sse([chunk("Hel"), chunk("lo"), chunk(finish_reason="stop"), chunk(usage=(3, 2))])
    openai_server.enqueue(
        Reply(json=completion("Hello")),
        stream_reply(body, cuts=[7, 30]),
        Reply(json=completion("Hello")),
        stream_reply(body, cuts=[7, 30]),
    )
    model = OpenAIChatModel(base_url=openai_server.base_url, api_key="sk-secret", model="m")
    prompt = Prompt("Hi")
    sync_call = model.call(prompt)
    sync_chunks = [c.text for c in model.stream(prompt)]

    async def main() -> tuple[Any, list[str]]:
        try:
            reply = await model.acall(prompt)
            chunks = [c.text async for c in model.astream(prompt)]
        finally:
            await model.aclose()
        return reply, chunks

    async_call, async_chunks = asyncio.run(main())
    model.close()
    assert async_call == sync_call
    assert async_chunks == sync_chunks == ["Hel", "lo", ""]
    assert [r.json for r in openai_server.requests[2:]] == [r.json for r in openai_server.requests[:2]]
    assert openai_server.requests[2].headers["authorization"] == "Bearer sk-secret"


def test_openai_acall_retries_then_maps_errors_like_the_sync_path(openai_server: OpenAIServer) -> None:
    waits: list[float] = []
    policy = RetryPolicy(max_retries=2, sleep=waits.append)
    model = OpenAIChatModel(base_url=openai_server.base_url, api_key="sk-secret", retry_policy=policy)
    openai_server.enqueue(
        Reply(status=503, json={"error": {"message": "busy"}}, headers={"Retry-After": "0"}),
        Reply(json=completion("after a retry")),
        Reply(status=400, json={"error": {"message": "bad key sk-secret"}}),
    )

    async def main() -> tuple[str, ModelError]:
        try:
            text = (await model.acall(Prompt("Hi"))).text
            with pytest.raises(ModelError) as caught:
                await model.acall(Prompt("Hi"))
        finally:
            await model.aclose()
        return text, caught.value

    text, error = asyncio.run(main())
    model.close()
    assert text == "after a retry"
    assert waits == [0.0]
    assert error.status_code == 400
    assert "HTTP 400" in str(error) and "bad key ***" in str(error)
    assert "sk-secret" not in str(error) and "sk-secret" not in (error.body or "")


def test_openai_aembed_matches_embed(openai_server: OpenAIServer) -> None:
    from rag.embeddings.openai import OpenAIEmbedding

    def reply(request: RecordedRequest) -> Reply:
        texts = request.json["input"]
        data = [{"index": i, "embedding": [len(t), 1.0, 2.0]} for i, t in enumerate(texts)]
        return Reply(json={"data": data})

    openai_server.default = reply
    model = OpenAIEmbedding("e", base_url=openai_server.base_url, api_key="k", batch_size=2)
    texts = ["one", "", "three", "four!", "five"]
    expected = model.embed(texts)

    async def main() -> Any:
        try:
            return await model.aembed(texts)
        finally:
            await model.aclose()

    rows = asyncio.run(main())
    model.close()
    assert rows.tolist() == expected.tolist()


def test_store_async_search_and_add_match_the_sync_ones() -> None:
    store = NumpyVectorStore(HashingEmbedding())
    documents = [Document(f"d{i}", f"tide {i} floods the causeway {'again ' * i}") for i in range(8)]
    request = SearchRequest("causeway floods", top_k=3)

    async def main() -> tuple[list[Document], list[Document], int]:
        await aadd(store, documents[:4])
        await store.aadd(iter(documents[4:]))  # a generator is read before the thread starts
        found = await asimilarity_search(store, request)
        native = await store.asimilarity_search(request)
        return found, native, await store.acount()

    found, native, count = asyncio.run(main())
    assert count == 8
    assert found == native == store.similarity_search(request)


class _City(BaseModel):
    name: str


def test_aentity_validates_and_retries_once() -> None:
    model = FakeChatModel(["not json", '{"name": "Paris"}'])
    city = asyncio.run(ChatClient(model).prompt("Capital of France?").aentity(_City))
    assert city == _City(name="Paris")
    assert "could not be used" in model.prompts[1].user_text


def test_an_async_only_advisor_is_refused_by_sync_requests_and_runs_in_async_ones() -> None:
    class OnlyAsync:
        name, order = "only-async", 0

        async def aadvise_call(self, request: Any, chain: Any) -> Any:
            return (await chain.anext_call(request)).with_metadata(seen=True)

    client = ChatClient(FakeChatModel(default="ok"), advisors=[OnlyAsync()])
    with pytest.raises(InvalidRequestError, match="only-async"):
        client.prompt("hi").call().content()
    response = asyncio.run(client.prompt("hi").acall().response())
    assert response.chat_response.metadata["seen"] is True


def test_a_subclass_overriding_only_the_sync_method_is_not_bypassed_in_async_requests() -> None:
    class Overrides(BaseAdvisor):
        def advise_call(self, request: Any, chain: Any) -> Any:
            return chain.next_call(request).replace_text("overridden")

    client = ChatClient(FakeChatModel(default="ok"), advisors=[Overrides()])
    assert asyncio.run(client.prompt("hi").acall().content()) == "overridden"


@pytest.mark.parametrize("streamed", [False, True])
def test_tool_calls_run_inside_an_async_chain(streamed: bool) -> None:
    from rag.chat import AssistantMessage, ToolCall
    from rag.tools import tool

    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers.

        Args:
            a: the first number.
            b: the second number.
        """
        return a + b

    model = FakeChatModel(
        [AssistantMessage(None, (ToolCall("call_0", "add", '{"a": 2, "b": 3}'),)), "It is 5."]
    )
    spec = ChatClient(model, tools=[add]).prompt("2 + 3?")

    async def run() -> str:
        if streamed:
            return "".join([text async for text in spec.astream()])
        return await spec.acall().content()

    assert asyncio.run(run()) == "It is 5."
    tool_message = model.prompts[1].messages[-1]
    assert tool_message.role.value == "tool" and "5" in (tool_message.text or "")


def test_aembed_retries_and_maps_errors_like_embed(openai_server: OpenAIServer) -> None:
    from rag.embeddings.openai import OpenAIEmbedding
    from rag.errors import EmbeddingError

    waits: list[float] = []
    openai_server.enqueue(
        Reply(status=500, json={"error": {"message": "hiccup"}}),
        Reply(status=400, json={"error": {"message": "input too long"}}),
    )
    policy = RetryPolicy(max_retries=1, sleep=waits.append, jitter=0.0)
    model = OpenAIEmbedding("e", base_url=openai_server.base_url, api_key="k", retry_policy=policy)

    async def main() -> EmbeddingError:
        try:
            with pytest.raises(EmbeddingError) as caught:
                await model.aembed(["a text"])
            return caught.value
        finally:
            await model.aclose()

    error = asyncio.run(main())
    model.close()
    assert waits == [0.5]
    assert error.status_code == 400 and "input too long" in str(error)


def test_an_unreachable_endpoint_is_a_model_error_after_the_retries() -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nothing listens once the socket is closed
    waits: list[float] = []
    policy = RetryPolicy(max_retries=2, sleep=waits.append)
    model = OpenAIChatModel(base_url=f"http://127.0.0.1:{port}/v1", api_key="k", retry_policy=policy)

    async def main() -> None:
        try:
            await model.acall(Prompt("Hi"))
        finally:
            await model.aclose()

    with pytest.raises(ModelError, match="after 3 attempts: connection error"):
        asyncio.run(main())
    model.close()
    assert len(waits) == 2
