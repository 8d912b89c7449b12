"""`NearDuplicateFilter` with a store: copies of a page go, pages sharing a paragraph stay, and the
pages are read in one `get`."""

from __future__ import annotations

from collections.abc import Sequence

from rag import Document, HashingEmbedding
from rag.filters import Filter
from rag.retrieval import NearDuplicateFilter
from rag.retrieval.stages import Query
from stores import NumpyVectorStore

SHARED = "Export the API key as SPRING_AI_OPENAI_API_KEY before you start the application."


class CountingStore(NumpyVectorStore):
    """The numpy store, counting its `get` calls."""

    gets = 0

    def get(
        self,
        ids: Sequence[str] | None = None,
        filter: str | Filter | None = None,
        limit: int | None = None,
        *,
        include_embeddings: bool = False,
    ) -> list[Document]:
        self.gets += 1
        return super().get(ids, filter, limit, include_embeddings=include_embeddings)


def _chunks(source: str, root: str, *texts: str) -> list[Document]:
    return [
        Document(f"{root}/{source}#{n}", text, {"source": source, "root": root, "chunk_index": n})
        for n, text in enumerate(texts)
    ]


def test_copies_go_shared_paragraphs_stay_and_pages_are_read_once() -> None:
    store = CountingStore(HashingEmbedding())
    chat = _chunks("openai-chat.md", "docs", "The chat client streams replies token by token.", SHARED)
    embed = _chunks("openai-embeddings.md", "docs", "The embedding client returns 1536 numbers.", SHARED)
    copy = _chunks("openai-chat.md", "v1", "The chat client streams replies token by token.", SHARED)
    store.add([*chat, *embed, *copy])
    hits = [chat[1], copy[1], embed[1]]  # ranked: the shared paragraph three times
    kept = NearDuplicateFilter(store=store).process(Query("api key"), hits)
    assert [d.id for d in kept] == ["docs/openai-chat.md#1", "docs/openai-embeddings.md#1"]
    assert store.gets == 1


def test_without_a_store_different_pages_are_kept_and_one_page_repeating_itself_is_not() -> None:
    page = _chunks("faq.md", "docs", SHARED, SHARED.lower())
    other = _chunks("guide.md", "docs", SHARED)
    kept = NearDuplicateFilter().process(Query("api key"), [*page, *other])
    assert [d.id for d in kept] == ["docs/faq.md#0", "docs/guide.md#0"]
