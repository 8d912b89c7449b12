"""The pipeline embeds a chunk with its title and headings when asked, and switching that re-embeds."""

from __future__ import annotations

from pathlib import Path

from ingest.pipeline import IngestPipeline
from ingest.splitters import RecursiveSplitter
from rag.testing import FakeEmbedding
from stores import NumpyVectorStore

GUIDE = "# FastAPI\n\n## Path Parameters\n\nDeclare them in the path.\n\nThen type them.\n"


def _run(folder: Path, store: NumpyVectorStore, manifest: Path, embed_context: bool) -> int:
    pipeline = IngestPipeline(store, RecursiveSplitter(4, 1), manifest=manifest, embed_context=embed_context)
    try:
        return pipeline.run([folder]).chunks_embedded
    finally:
        pipeline.manifest.close()


def test_switching_embed_context_re_embeds_with_title_and_headings(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "guide.md").write_text(GUIDE, encoding="utf-8")
    fake = FakeEmbedding(dimensions=8)
    store = NumpyVectorStore(fake)
    manifest = tmp_path / "manifest.sqlite"
    plain = _run(folder, store, manifest, False)
    texts = sorted(d.text for d in store.get())
    assert sorted(t for call in fake.calls for t in call) == texts
    fake.calls.clear()
    assert _run(folder, store, manifest, False) == 0  # unchanged: nothing embedded
    with_context = _run(folder, store, manifest, True)
    assert with_context == plain and store.count() == plain  # every chunk again, the old ones gone
    assert sorted(d.text for d in store.get()) == texts  # the stored text is unchanged
    embedded = [t for call in fake.calls for t in call]
    assert "FastAPI > Path Parameters: the path." in embedded
    assert "FastAPI: ## Path Parameters\n\nDeclare" in embedded  # its heading line is not repeated
    assert all(t.startswith("FastAPI") for t in embedded)
