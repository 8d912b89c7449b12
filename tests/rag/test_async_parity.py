"""Sync and async paths: the same results, the advisors in the same order. One suite, four modes."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from rag.advisors import BaseAdvisor, MessageChatMemoryAdvisor, QuestionAnswerAdvisor
from rag.advisors.request import retrieved_documents
from rag.client import ChatClient, ChatClientRequest, ChatClientResponse
from rag.documents import Document
from rag.embeddings import HashingEmbedding
from rag.memory import MessageWindowChatMemory, SQLiteChatMemoryRepository
from rag.testing import FakeChatModel
from stores import NumpyVectorStore

MODES = ["call", "stream", "acall", "astream"]


class Hooks(BaseAdvisor):
    """before/after only: one definition serves every mode."""

    def __init__(self, log: list[str], name: str, order: int) -> None:
        super().__init__(name=name, order=order)
        self.log = log

    def before(self, request: ChatClientRequest, chain: Any) -> ChatClientRequest:
        self.log.append(f"{self.name}:in")
        return request.with_prompt(request.prompt.augment_user(request.user_text + f" <{self.name}>"))

    def after(self, response: ChatClientResponse, chain: Any) -> ChatClientResponse:
        self.log.append(f"{self.name}:out")
        return response.with_metadata(**{self.name: True})


class SyncOnly:
    """A plain sync advisor (no BaseAdvisor): run in a thread, its chain bridged, in async requests."""

    def __init__(self, log: list[str], order: int) -> None:
        self.log, self.order, self.name = log, order, "sync-only"

    def advise_call(self, request: ChatClientRequest, chain: Any) -> ChatClientResponse:
        self.log.append("sync-only:in")
        response = chain.next_call(request)
        self.log.append("sync-only:out")
        return response

    def advise_stream(self, request: ChatClientRequest, chain: Any) -> Iterator[ChatClientResponse]:
        self.log.append("sync-only:in")
        yield from chain.next_stream(request)
        self.log.append("sync-only:out")


class BothWays:
    """Sync and native async methods; both log the same, so only the mode tells them apart."""

    def __init__(self, log: list[str], order: int) -> None:
        self.log, self.order, self.name = log, order, "both"

    def advise_call(self, request: ChatClientRequest, chain: Any) -> ChatClientResponse:
        self.log.append("both:in")
        response = chain.next_call(request)
        self.log.append("both:out")
        return response

    def advise_stream(self, request: ChatClientRequest, chain: Any) -> Iterator[ChatClientResponse]:
        self.log.append("both:in")
        yield from chain.next_stream(request)
        self.log.append("both:out")

    async def aadvise_call(self, request: ChatClientRequest, chain: Any) -> ChatClientResponse:
        self.log.append("both:in")
        response = await chain.anext_call(request)
        self.log.append("both:out")
        return response

    async def aadvise_stream(
        self, request: ChatClientRequest, chain: Any
    ) -> AsyncIterator[ChatClientResponse]:
        self.log.append("both:in")
        async for item in chain.anext_stream(request):
            yield item
        self.log.append("both:out")


def _run(mode: str, client: ChatClient, question: str) -> tuple[str, dict[str, Any]]:
    spec = client.prompt(question).advisors(QuestionAnswerAdvisor.Params(top_k=2), conversation_id="conv-1")
    if mode == "call":
        response = spec.call().response()
        return response.text, response.context
    if mode == "stream":
        reply = spec.stream()
        return "".join(reply.content()), reply.context
    if mode == "acall":
        aresponse = asyncio.run(spec.acall().response())
        return aresponse.text, aresponse.context

    async def read() -> tuple[str, dict[str, Any]]:
        areply = spec.astream()
        return "".join([text async for text in areply]), areply.context

    return asyncio.run(read())


def _scenario(mode: str, folder: Path) -> dict[str, Any]:
    log: list[str] = []
    store = NumpyVectorStore(HashingEmbedding())
    store.add(
        [
            Document("tides", "Spring tides flood the causeway twice a month.", {"source": "tides.md"}),
            Document("keepers", "The keepers rotate every fortnight.", {"source": "keepers.txt"}),
            Document("beacon", "Mount the beacon lamp on the north tower.", {"source": "install.md"}),
        ]
    )
    repository = SQLiteChatMemoryRepository(folder / f"{mode}.sqlite")
    memory = MessageWindowChatMemory(repository)
    model = FakeChatModel(lambda prompt: f"reply {len(prompt.messages)}: {prompt.user_text[-40:]}")
    advisors: list[Any] = [
        Hooks(log, "late", 50),
        SyncOnly(log, 20),
        QuestionAnswerAdvisor(store),
        Hooks(log, "early", -50),
        BothWays(log, 10),
        MessageChatMemoryAdvisor(memory),
    ]
    client = ChatClient(model, advisors=advisors)
    first = _run(mode, client, "When do the tides flood the causeway?")
    second = _run(mode, client, "Who rotates?")
    repository.close()
    return {
        "texts": [first[0], second[0]],
        "retrieved": [[d.id for d in retrieved_documents(ctx)] for _, ctx in (first, second)],
        # The model step is named for the mode ("model:call", "model:stream"); the rest must match.
        "timings": [[t.name.split(":")[0] for t in ctx["rag.timings"]] for _, ctx in (first, second)],
        "log": log,
        "prompts": [[(m.role.value, getattr(m, "text", None)) for m in p.messages] for p in model.prompts],
        "memory": [(m.role.value, m.text) for m in memory.get("conv-1")],
    }


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _scenario("call", tmp_path_factory.mktemp("reference"))


@pytest.mark.parametrize("mode", MODES)
def test_every_mode_gives_the_same_results_and_order(
    mode: str, reference: dict[str, Any], tmp_path: Path
) -> None:
    result = _scenario(mode, tmp_path)
    assert result == reference
    # The reference itself is what the orders promise: lowest order first in, last out.
    turn = [
        "early:in",
        "both:in",
        "sync-only:in",
        "late:in",
        "late:out",
        "sync-only:out",
        "both:out",
        "early:out",
    ]
    assert reference["log"] == turn + turn
    assert reference["timings"][0] == [
        "model",
        "late",
        "sync-only",
        "both",
        "QuestionAnswerAdvisor",
        "early",
        "MessageChatMemoryAdvisor",
    ]
    assert reference["retrieved"] == [["tides", "beacon"], ["keepers", "beacon"]]
    assert len(reference["memory"]) == 4
