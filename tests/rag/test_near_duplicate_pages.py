"""`NearDuplicateFilter` with a store: copies of a page go, pages sharing a paragraph stay, and the
text around the hits is read in one `get`, never a whole long page."""

from __future__ import annotations

import random
from collections.abc import Sequence

from rag import Document, HashingEmbedding
from rag.filters import Filter
from rag.retrieval import NearDuplicateFilter
from rag.retrieval.stages import Query
from stores import NumpyVectorStore

SHARED = "Export the API key as SPRING_AI_OPENAI_API_KEY before you start the application."


class CountingStore(NumpyVectorStore):
    """The numpy store, counting its `get` calls and the documents they return."""

    gets = 0
    read = 0

    def get(
        self,
        ids: Sequence[str] | None = None,
        filter: str | Filter | None = None,
        limit: int | None = None,
        *,
        include_embeddings: bool = False,
    ) -> list[Document]:
        found = super().get(ids, filter, limit, include_embeddings=include_embeddings)
        self.gets += 1
        self.read += len(found)
        return found


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


def _texts(rng: random.Random, count: int) -> list[str]:
    """`count` different paragraphs of made-up words."""
    words = [f"{a}{b}" for a in ("ka", "lo", "mi", "nu", "pe", "ri", "so", "tu") for b in "bdfgkmnprst"]
    return [" ".join(rng.choices(words, k=40)) + "." for _ in range(count)]


def test_long_pages_are_told_apart_by_the_text_around_the_hits() -> None:
    """A 40-chunk guide, its copy, and a book that holds it chunked at other places; two 20-chunk pages
    sharing one paragraph; `all.html` repeating 60 three-chunk pages. The copies go, the sharing pages
    stay, and no long page is read whole."""
    rng = random.Random(7)
    store = CountingStore(HashingEmbedding())
    guide = _texts(rng, 40)
    pages = [_chunks(f"api/p{n}.md", "docs", *_texts(rng, 3)) for n in range(60)]
    everything = _chunks("all.html", "docs", *(chunk.text for page in pages for chunk in page))
    halves = [" ".join(guide[17].split()[:20]), " ".join(guide[17].split()[20:])]
    book = [*guide[:17], *halves, *guide[18:23], f"{guide[23]} {guide[24]}", *guide[25:]]
    first, second = _texts(rng, 20), _texts(rng, 20)
    first[10] = second[10] = SHARED
    long_pages = [
        _chunks("guide.md", "docs", *guide),
        _chunks("guide.md", "v1", *guide),
        _chunks("book.md", "docs", *book),
        _chunks("first.md", "docs", *first),
        _chunks("second.md", "docs", *second),
    ]
    store.add([*everything, *(c for page in [*pages, *long_pages] for c in page)])
    copy_of_page_7 = everything[7 * 3 + 1]
    hits = [
        long_pages[0][20],  # the guide, then its copies
        long_pages[1][20],
        long_pages[2][21],
        long_pages[3][10],  # two pages sharing one paragraph
        long_pages[4][10],
        pages[7][1],  # a page, then its copy inside all.html
        copy_of_page_7,
    ]
    kept = NearDuplicateFilter(store=store).process(Query("guide"), hits)
    assert [d.id for d in kept] == [
        "docs/guide.md#20",
        "docs/first.md#10",
        "docs/second.md#10",
        "docs/api/p7.md#1",
    ]
    assert store.gets == 1
    assert store.read < len(everything) // 2  # all.html (180 chunks) and the guides (40) are not read whole
