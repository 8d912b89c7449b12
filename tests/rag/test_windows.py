"""Passage windows: a hit read with its neighbouring chunks of the same page, each chunk shown once."""

from __future__ import annotations

import asyncio

from rag import Document, HashingEmbedding, SearchRequest
from rag.retrieval.documents_view import DocumentsView
from rag.retrieval.windows import widen
from stores import NumpyVectorStore


def _chunk(source: str, index: int, text: str, **meta: object) -> Document:
    return Document(f"{source}#{index}", text, {"source": source, "chunk_index": index, **meta})


def _store(*documents: Document) -> NumpyVectorStore:
    store = NumpyVectorStore(HashingEmbedding())
    store.add(documents)
    return store


def test_a_hit_is_read_with_its_neighbours_in_page_order_and_keeps_its_scores() -> None:
    store = _store(*(_chunk("a.md", i, f"part {i}.") for i in range(5)), _chunk("b.md", 3, "other page."))
    [hit] = store.get(["a.md#2"])
    [widened] = widen(store, [hit.with_scores({"cosine": 0.5})])
    assert widened.text == "part 1.\n\npart 2.\n\npart 3."
    assert widened.id == "a.md#2" and widened.metadata == hit.metadata and widened.scores == {"cosine": 0.5}
    assert widen(store, [hit], neighbours=2)[0].text.startswith("part 0.\n\npart 1.")


def test_each_chunk_is_shown_once_and_windows_stop_at_other_hits() -> None:
    store = _store(*(_chunk("a.md", i, f"part {i}.") for i in range(6)))
    hits = store.get(["a.md#4", "a.md#1", "a.md#2"])
    hits = sorted(hits, key=lambda d: ["a.md#4", "a.md#1", "a.md#2"].index(d.id))
    assert [d.text for d in widen(store, hits)] == [
        "part 3.\n\npart 4.\n\npart 5.",
        "part 0.\n\npart 1.",
        "part 2.",
    ]


def test_other_roots_pdf_pages_and_documents_without_a_chunk_index_are_not_mixed_in() -> None:
    store = _store(
        _chunk("m.pdf", 0, "page one text.", page=1, root="docs"),
        _chunk("m.pdf", 1, "page two text.", page=2, root="docs"),
        _chunk("m.pdf", 2, "more of page two.", page=2, root="docs"),
        Document("old", "another folder.", {"source": "m.pdf", "chunk_index": 0, "page": 2, "root": "old"}),
        Document("loose", "no chunk index", {"source": "m.pdf"}),
    )
    hits = [d for d in store.get(filter="root == 'docs'") if d.metadata["chunk_index"] == 1]
    hits += [d for d in store.get(filter="root == 'old'")]
    hits += store.get(["loose"])
    assert [d.text for d in widen(store, hits)] == [
        "page two text.\n\nmore of page two.",  # not page one's chunk, nor the other folder's
        "another folder.",
        "no chunk index",
    ]


def test_a_splitters_overlap_is_not_repeated() -> None:
    page = "One two three. Four five six. Seven eight nine."
    first, second = page[:29], page[15:]  # "Four five six." is in both
    store = _store(
        _chunk("o.md", 0, first, char_start=0, char_end=29),
        _chunk("o.md", 1, second, char_start=15, char_end=len(page)),
    )
    [widened] = widen(store, store.get(["o.md#0"]))
    assert widened.text == "One two three. Four five six.\n\nSeven eight nine."


def test_the_view_widens_its_search_hits_and_memory_turns_are_never_neighbours() -> None:
    store = _store(
        _chunk("i.md", 0, "## From packages"),
        _chunk("i.md", 1, "Run apt install marlin."),
        Document("m", "remembered", {"source": "i.md", "chunk_index": 2, "rag:kind": "chat_memory"}),
    )
    view = DocumentsView(store, window=1)
    request = SearchRequest("From packages", top_k=1, mode="lexical")
    [hit] = view.similarity_search(request)
    assert hit.id == "i.md#0" and hit.text == "## From packages\n\nRun apt install marlin."
    [awaited] = asyncio.run(view.asimilarity_search(request))
    assert awaited.text == hit.text
    [plain] = DocumentsView(store).similarity_search(request)
    assert plain.text == "## From packages"
