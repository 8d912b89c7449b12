"""The incremental pipeline on both real stores: the add / modify / rename / delete / duplicate matrix."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from ingest.chunking import chunk_id
from ingest.pipeline import READERS_VERSION, IngestPipeline
from ingest.progress import ProgressEvent
from ingest.splitters import RecursiveSplitter
from rag import Document, HashingEmbedding
from rag.embeddings import EmbeddingModel
from rag.vectorstore import VectorStore

EMBEDDING = HashingEmbedding(64)


class CountingStore:
    """Wraps a store and counts what reaches it."""

    def __init__(self, inner: VectorStore) -> None:
        self.inner = inner
        self.add_calls = 0
        self.added = 0
        self.deleted: list[str] = []

    @property
    def embedding(self) -> EmbeddingModel:
        return self.inner.embedding

    def add(self, documents: Iterable[Document]) -> None:
        docs = list(documents)
        self.add_calls += 1
        self.added += len(docs)
        self.inner.add(docs)

    def delete(self, ids: Iterable[str] | None = None, *, filter: Any = None) -> int:
        if ids is not None:
            ids = list(ids)
            self.deleted.extend(ids)
            return self.inner.delete(ids)
        return self.inner.delete(filter=filter)

    def get(
        self, ids: Sequence[str] | None = None, filter: Any = None, limit: int | None = None, **kw: Any
    ) -> list[Document]:
        return self.inner.get(ids, filter, limit, **kw)

    def count(self, filter: Any = None) -> int:
        return self.inner.count(filter)

    def similarity_search(self, request: Any) -> list[Document]:
        return self.inner.similarity_search(request)


class Bench:
    """A folder, a store kind and a manifest; each `pipeline()` opens everything afresh, as a new process."""

    def __init__(self, tmp: Path, kind: str) -> None:
        self.tmp, self.kind = tmp, kind
        self.docs = tmp / "docs"
        self.docs.mkdir()
        self.manifest = tmp / "manifest.sqlite"
        self.splitter = RecursiveSplitter(20, 4)
        self._closers: list[Callable[[], None]] = []

    def open_store(self) -> tuple[VectorStore, Callable[[], None] | None]:
        if self.kind == "numpy":
            from stores import NumpyVectorStore

            folder = self.tmp / "numpy"
            store = NumpyVectorStore(EMBEDDING, path=folder)

            def save() -> None:
                store.save()

            return store, save
        from stores import ChromaVectorStore

        chroma = ChromaVectorStore(EMBEDDING, collection="test", path=str(self.tmp / "chroma"))
        if callable(close := getattr(chroma, "close", None)):
            self._closers.append(close)
        return chroma, None

    def pipeline(
        self, wrap: Callable[[VectorStore], Any] = CountingStore, **kw: Any
    ) -> tuple[IngestPipeline, Any]:
        store, flush = self.open_store()
        counted = wrap(store)
        return IngestPipeline(counted, self.splitter, manifest=self.manifest, flush=flush, **kw), counted

    def write(self, name: str, text: str) -> Path:
        path = self.docs / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    def close(self) -> None:
        for close in self._closers:
            close()


@pytest.fixture(params=["numpy", "chroma"])
def bench(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Bench]:
    b = Bench(tmp_path, request.param)
    yield b
    b.close()


def _text(topic: str, sentences: int = 3) -> str:
    return " ".join(f"Sentence {i} is about {topic} and nothing else." for i in range(sentences))


def _sources(store: VectorStore) -> dict[str, int]:
    counts: dict[str, int] = {}
    for doc in store.get():
        counts[str(doc.metadata["source"])] = counts.get(str(doc.metadata["source"]), 0) + 1
    return counts


def test_incremental_matrix(bench: Bench) -> None:
    bench.write("a.md", "# Alpha\n\n" + _text("alpha"))
    bench.write("b.txt", _text("beta"))
    bench.write("dup/one.txt", _text("same"))
    bench.write("dup/two.txt", _text("same"))
    bench.write("big.txt", "\n\n".join(_text(f"topic{i}", 4) for i in range(260)))
    pipeline, store = bench.pipeline()
    first = pipeline.run([bench.docs])
    assert first.counts["new"] == 5 and first.ok and first.truncated_chunks == 0
    assert first.chunks_written == first.chunks_embedded == store.added > 0
    sources = _sources(store)
    assert sources["big.txt"] >= 500  # a file with 500+ chunks
    assert sources["dup/one.txt"] == sources["dup/two.txt"] >= 1  # identical content stays findable twice
    assert store.count("source == 'dup/two.txt'") == sources["dup/two.txt"]
    total = store.count()

    # Unchanged: nothing embedded, nothing written, not one add call.
    pipeline, store = bench.pipeline()
    again = pipeline.run([bench.docs])
    assert again.counts["unchanged"] == 5 and again.chunks_embedded == 0 and store.add_calls == 0
    assert store.deleted == [] and store.count() == total

    # Modify one file, rename another, delete a third, add a new one.
    os.utime(bench.write("b.txt", _text("beta") + " A new closing sentence about gamma."), (1, 1))
    (bench.docs / "a.md").rename(bench.docs / "renamed.md")
    (bench.docs / "dup" / "two.txt").unlink()
    bench.write("c.md", _text("charlie"))
    old_b = {d.id for d in store.get(filter="source == 'b.txt'")}
    pipeline, store = bench.pipeline()
    third = pipeline.run([bench.docs])
    counts = third.counts
    assert (counts["new"], counts["changed"], counts["deleted"], counts["unchanged"]) == (2, 1, 2, 2)
    sources = _sources(store)
    assert "a.md" not in sources and "dup/two.txt" not in sources
    assert sources["renamed.md"] >= 1 and sources["c.md"] >= 1 and sources["dup/one.txt"] >= 1
    assert {r.source for r in third.files if r.status == "deleted"} == {"a.md", "dup/two.txt"}
    new_b = {d.id for d in store.get(filter="source == 'b.txt'")}
    assert any("gamma" in d.text for d in store.get(filter="source == 'b.txt'"))
    # Only the changed file's changed chunks (plus the new files) were embedded.
    embedded_b = next(r.embedded for r in third.files if r.source == "b.txt")
    assert embedded_b == len(new_b - old_b) and third.chunks_embedded == store.added
    assert set(store.deleted) >= (old_b - new_b)


def test_no_prune_keeps_deleted_files(bench: Bench) -> None:
    bench.write("a.txt", _text("alpha"))
    bench.write("b.txt", _text("beta"))
    pipeline, _ = bench.pipeline()
    pipeline.run([bench.docs])
    (bench.docs / "b.txt").unlink()
    pipeline, store = bench.pipeline()
    report = pipeline.run([bench.docs], prune=False)
    assert report.counts["deleted"] == 0 and store.count("source == 'b.txt'") >= 1
    pipeline, store = bench.pipeline()
    assert pipeline.run([bench.docs]).counts["deleted"] == 1 and store.count("source == 'b.txt'") == 0


def test_files_include_and_exclude_leave_out_keep_their_chunks(bench: Bench) -> None:
    bench.write("guide/a.md", _text("alpha"))
    bench.write("drafts/b.md", _text("beta"))
    pipeline, _ = bench.pipeline()
    pipeline.run([bench.docs])
    pipeline, store = bench.pipeline()
    report = pipeline.run([bench.docs], include=["nomatch/*"])  # matches nothing: every file left out
    assert report.counts["deleted"] == 0 and store.deleted == []
    assert _sources(store).keys() == {"guide/a.md", "drafts/b.md"}
    (bench.docs / "guide" / "a.md").unlink()  # a file gone from the disk is pruned, patterns or not
    pipeline, store = bench.pipeline()
    report = pipeline.run([bench.docs], exclude=["drafts"])
    assert {r.source for r in report.files if r.status == "deleted"} == {"guide/a.md"}
    assert _sources(store).keys() == {"drafts/b.md"}


def test_edit_one_file_writes_new_chunks_before_deleting_old(bench: Bench) -> None:
    bench.write("a.txt", _text("alpha", 8))
    pipeline, _ = bench.pipeline()
    pipeline.run([bench.docs])
    bench.write("a.txt", _text("omega", 8))
    events: list[str] = []

    class Ordered(CountingStore):
        def add(self, documents: Iterable[Document]) -> None:
            events.append("add")
            super().add(documents)

        def delete(self, ids: Iterable[str] | None = None, *, filter: Any = None) -> int:
            events.append("delete")
            return super().delete(ids, filter=filter)

    pipeline, store = bench.pipeline(wrap=Ordered)
    report = pipeline.run([bench.docs])
    assert report.counts["changed"] == 1 and events[0] == "add" and "delete" in events
    assert all("omega" in d.text for d in store.get())


def _failing_after(n_calls: int) -> type[CountingStore]:
    class Crashing(CountingStore):
        def add(self, documents: Iterable[Document]) -> None:
            if self.add_calls >= n_calls:
                raise KeyboardInterrupt  # as if the user pressed Ctrl-C in the middle of a write
            super().add(documents)

    return Crashing


def test_interrupted_run_is_completed_by_the_next(bench: Bench) -> None:
    for i in range(12):
        bench.write(f"f{i:02d}.txt", _text(f"subject{i}", 6))
    pipeline, _ = bench.pipeline(wrap=_failing_after(2), batch_size=8)
    with pytest.raises(KeyboardInterrupt):
        pipeline.run([bench.docs])
    pipeline.manifest.close()
    for i in range(4):  # edit some files while the run was dead: the next run must notice
        bench.write(f"f{i:02d}.txt", _text(f"edited{i}", 5))
    pipeline, store = bench.pipeline()
    report = pipeline.run([bench.docs])
    assert report.ok and report.counts["new"] + report.counts["changed"] + report.counts["unchanged"] == 12
    expected = {f"f{i:02d}.txt" for i in range(12)}
    assert set(_sources(store)) == expected
    # No orphans: every stored id belongs to the current text of its file.
    ids = {d.id for d in store.get()}
    pipeline, store = bench.pipeline()
    assert pipeline.run([bench.docs]).chunks_embedded == 0
    assert {e for entry in pipeline.manifest.entries().values() for e in entry.chunk_ids} == ids
    assert not any("subject0 " in d.text for d in store.get(filter="source == 'f00.txt'"))


def test_failing_file_does_not_stop_the_run(tmp_path: Path) -> None:
    bench = Bench(tmp_path, "numpy")
    bench.write("good.txt", _text("good"))
    (bench.docs / "bad.pdf").write_bytes(b"%PDF-1.4 this is not really a pdf")
    (bench.docs / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    bench.write("z.txt", _text("zulu"))
    pipeline, store = bench.pipeline()
    report = pipeline.run([bench.docs])
    by_source = {r.source: r for r in report.files}
    assert by_source["bad.pdf"].status == "failed" and "bad.pdf" in (by_source["bad.pdf"].reason or "")
    assert by_source["image.png"].status == "skipped" and "unsupported" in (
        by_source["image.png"].reason or ""
    )
    assert by_source["good.txt"].status == by_source["z.txt"].status == "new"
    assert not report.ok and set(_sources(store)) == {"good.txt", "z.txt"}


def test_metadata_ids_progress_and_single_file(tmp_path: Path) -> None:
    bench = Bench(tmp_path, "numpy")
    path = bench.write("guide.md", "---\ntitle: Guide\n---\n# Install\n\n" + _text("install", 2))
    events: list[ProgressEvent] = []
    pipeline, store = bench.pipeline(
        extra_metadata={"project": "atlas", "year": 2024}, on_progress=events.append
    )
    report = pipeline.run([path])
    docs = store.get()
    assert report.counts["new"] == 1 and docs
    meta = docs[0].metadata
    assert meta["source"] == "guide.md" and meta["project"] == "atlas" and meta["year"] == 2024
    assert {"chunk_index", "char_start", "char_end"} <= meta.keys() and meta.get("section") == "Install"
    first = min(docs, key=lambda d: d.metadata["chunk_index"])
    assert meta["root"] == "docs"  # the folder of a file given directly is its root
    assert first.id == chunk_id("docs/guide.md", 0, first.text, bench.splitter.settings_key)
    assert events[0].phase == "start" and events[-1].phase == "done"
    assert events[-1].files_done == events[-1].files_total == 1
    with pytest.raises(Exception, match="'source' is set by the pipeline"):
        IngestPipeline(store, bench.splitter, extra_metadata={"source": "x"})


def test_jsonl_records_keep_their_ids_when_another_record_changes(tmp_path: Path) -> None:
    bench = Bench(tmp_path, "numpy")
    rows = [f'{{"_id": "r{i}", "title": "T{i}", "text": "{_text(f"rec{i}", 1)}"}}' for i in range(5)]
    bench.write("corpus.jsonl", "\n".join(rows) + "\n")
    from ingest.readers import ReaderOptions

    options = ReaderOptions(text_field="title,text", id_field="_id")
    pipeline, store = bench.pipeline(reader_options=options)
    assert pipeline.run([bench.docs]).chunks_written == 5
    rows[2] = '{"_id": "r2", "title": "T2", "text": "Replaced record."}'
    bench.write("corpus.jsonl", "\n".join(rows) + "\n")
    pipeline, store = bench.pipeline(reader_options=options)
    report = pipeline.run([bench.docs])
    assert report.counts["changed"] == 1 and report.chunks_embedded == 1 and len(store.deleted) == 1
    assert store.count() == 5


def test_jsonl_with_only_bad_lines_fails_and_a_partly_bad_one_is_read_again(tmp_path: Path) -> None:
    bench = Bench(tmp_path, "numpy")
    bench.write("broken.jsonl", '{"text": \n[1]\n')
    bench.write("partial.jsonl", '{"text": "A good record about lamps."}\nnot json\n')
    pipeline, store = bench.pipeline()
    report = pipeline.run([bench.docs])
    by_source = {r.source: r for r in report.files}
    assert by_source["broken.jsonl"].status == "failed" and len(by_source["broken.jsonl"].errors) == 2
    assert "'broken.jsonl' line 1: invalid JSON" in (by_source["broken.jsonl"].reason or "")
    assert by_source["partial.jsonl"].status == "new" and by_source["partial.jsonl"].chunks == 1
    assert by_source["partial.jsonl"].errors == [
        "'partial.jsonl' line 2: invalid JSON: Expecting value: line 1 column 1 (char 0)"
    ]
    assert not report.ok and store.count() == 1
    pipeline, store = bench.pipeline()
    again = {r.source: r for r in pipeline.run([bench.docs]).files}
    assert again["partial.jsonl"].errors and again["partial.jsonl"].embedded == 0 and store.added == 0


def test_jsonl_with_a_bad_line_settles_unchanged_and_is_read_again_once_fixed(bench: Bench) -> None:
    good = '{"text": "A good record about tides."}\n'
    bench.write("c.jsonl", good + "{not json\n")
    pipeline, store = bench.pipeline()
    first = pipeline.run([bench.docs]).files[0]
    assert (first.status, first.chunks, len(first.errors)) == ("new", 1, 1)
    ids = [d.id for d in store.get()]
    for _ in range(2):  # every later run: unchanged, nothing written, the bad line still reported
        pipeline, store = bench.pipeline()
        report = pipeline.run([bench.docs])
        again = report.files[0]
        assert (again.status, again.chunks, again.embedded) == ("unchanged", 1, 0)
        assert again.errors == first.errors and "'c.jsonl' line 2: invalid JSON" in again.errors[0]
        assert not report.ok and report.counts["changed"] == 0
        assert (store.added, store.deleted, [d.id for d in store.get()]) == (0, [], ids)
    bench.write("c.jsonl", good + '{"text": "A second record about harbours."}\n')
    pipeline, store = bench.pipeline()
    report = pipeline.run([bench.docs])
    fixed = report.files[0]
    assert (fixed.status, fixed.chunks, fixed.embedded, fixed.errors) == ("changed", 2, 1, [])
    assert report.ok and store.count() == 2 and store.deleted == []
    pipeline, store = bench.pipeline()
    assert pipeline.run([bench.docs]).files[0].status == "unchanged" and store.added == 0


def test_hard_kill_of_a_saving_store_loses_only_the_last_checkpoint(tmp_path: Path) -> None:
    bench = Bench(tmp_path, "numpy")
    for i in range(10):
        bench.write(f"f{i}.txt", _text(f"subject{i}", 6))
    store, save = bench.open_store()
    assert save is not None
    saves = 0

    def flush() -> None:  # saves until the crash; after it, nothing reaches the disk (as with kill -9)
        nonlocal saves
        if crashing.add_calls >= 3:
            raise OSError("killed")
        saves += 1
        save()

    crashing = _failing_after(3)(store)
    pipeline = IngestPipeline(
        crashing, bench.splitter, manifest=bench.manifest, flush=flush, batch_size=8, checkpoint_s=0
    )
    with pytest.raises(KeyboardInterrupt):
        pipeline.run([bench.docs])
    pipeline.manifest.close()
    assert saves >= 1
    pipeline, store = bench.pipeline()
    report = pipeline.run([bench.docs])
    assert report.ok and 0 < report.counts["new"] < 10 and report.counts["unchanged"] > 0
    assert set(_sources(store)) == {f"f{i}.txt" for i in range(10)}
    manifest_ids = {i for entry in pipeline.manifest.entries().values() for i in entry.chunk_ids}
    assert manifest_ids == {d.id for d in store.get()}


def test_a_new_readers_version_reads_every_file_again_and_keeps_unchanged_chunks(
    bench: Bench, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A release whose readers clean text differently bumps READERS_VERSION: homes read each file again
    # at their next ingest, and only chunks whose text or metadata changed are embedded.
    bench.write("a.md", "# Alpha\n\n" + _text("alpha"))
    first, _ = bench.pipeline()
    assert first.run([bench.docs]).counts["new"] == 1
    monkeypatch.setattr("ingest.pipeline.READERS_VERSION", READERS_VERSION + 1)
    again, store = bench.pipeline()
    report = again.run([bench.docs])
    assert report.counts["changed"] == 1 and report.ok
    assert report.chunks_embedded == 0 and store.added == 0 and store.deleted == []
