"""The incremental ingestion pipeline: walk, read, split, embed in batches, write to any `VectorStore`.

Files are compared with the manifest first (size and mtime, then content hash), so an unchanged file is
neither parsed nor embedded. Chunks of new and changed files are embedded and written in batches across
files; a changed file's new chunks are written before its stale ones are deleted. Each file's manifest row
is replaced only after the store holds its chunks (see `ingest.manifest` for crash recovery).

Example:
    >>> from rag import HashingEmbedding
    >>> from stores import NumpyVectorStore
    >>> from ingest.splitters import RecursiveSplitter
    >>> store = NumpyVectorStore(HashingEmbedding())
    >>> pipeline = IngestPipeline(store, RecursiveSplitter(200, 20))
    >>> report = pipeline.run(["docs/"])  # doctest: +SKIP
    >>> report.counts["new"], report.chunks_written  # doctest: +SKIP
    (12, 87)
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence

from ingest.chunking import RESERVED_METADATA, Splitter
from ingest.manifest import Manifest
from ingest.progress import ProgressEvent
from ingest.readers import ReaderOptions
from ingest.readers.registry import file_suffix, reader_key
from ingest.report import IngestReport
from ingest.run import Run
from ingest.walk import walk
from rag.documents import MetadataValue, check_metadata
from rag.errors import IngestError
from rag.observability.steps import traced_ingest
from rag.vectorstore import VectorStore

__all__ = ["READERS_VERSION", "IngestPipeline"]

READERS_VERSION = 5
"""Bumped when readers extract different text from the same file (2: markup noise left out; 5: reST
includes and substitutions, Markdown links and escapes)."""


def _digest(parts: list[object]) -> str:
    return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()[:16]


class IngestPipeline:
    """Ingests folders and files into a vector store, incrementally, through a manifest.

    Args:
        store: any `VectorStore`; its `embedding` embeds the chunks.
        splitter: cuts units into chunks (`ingest.splitters.RecursiveSplitter`).
        manifest: a `Manifest` or a path for one; None keeps one in memory (no incremental re-runs).
        flush: called to make the store durable (`lambda: store.save(folder)` for the numpy store).
            When given, the manifest is committed only right after it, at checkpoints and at the end.
        reader_options: PDF password and JSON Lines fields.
        extra_metadata: added to every chunk (`--meta key=value`).
        on_progress: called with a `ProgressEvent` per file, per batch and at the end.
        embed_context: embed each chunk as `"title > heading path: text"` (see `embedding_input`)
            rather than its text alone. It changes the vectors, so it is part of the chunk ids and of
            the settings: switching it re-embeds every file on the next run.

    Each file's manifest row records the settings it was read with (`settings_for`): changing a
    reader option re-reads only the files that reader reads (`--as-text .cfg`: the `.cfg` files).

    Example:
        >>> pipeline = IngestPipeline(store, splitter, manifest=".rag/manifest.sqlite")  # doctest: +SKIP
        >>> pipeline.run(["docs/"], exclude=["drafts/**"]).summary()  # doctest: +SKIP
    """

    def __init__(
        self,
        store: VectorStore,
        splitter: Splitter,
        *,
        manifest: Manifest | str | os.PathLike[str] | None = None,
        flush: Callable[[], None] | None = None,
        reader_options: ReaderOptions | None = None,
        extra_metadata: Mapping[str, MetadataValue] | None = None,
        on_progress: Callable[[ProgressEvent], None] | None = None,
        batch_size: int = 1024,
        checkpoint_s: float = 30.0,
        embed_context: bool = False,
    ) -> None:
        extra = check_metadata("--meta", dict(extra_metadata or {}))
        reserved = sorted(RESERVED_METADATA & extra.keys())
        if reserved:
            raise IngestError(f"metadata key {reserved[0]!r} is set by the pipeline and cannot be given")
        self.store = store
        self.splitter = splitter
        self.manifest = manifest if isinstance(manifest, Manifest) else Manifest(manifest or ":memory:")
        self.flush = flush
        self.reader_options = reader_options or ReaderOptions()
        self.extra_metadata = extra
        self.on_progress = on_progress
        self.batch_size = batch_size
        self.checkpoint_s = checkpoint_s
        self.embed_context = embed_context
        # Every file's key holds these, plus how its own suffix is read (`reader_key`): a reader option
        # changes the key of the files that reader reads, and no other's.
        self._common = [
            READERS_VERSION,  # cleaner readers: files are read again, unchanged chunks kept
            embed_context,
            splitter.settings_key,
            store.embedding.name,
            sorted(extra.items()),
        ]
        self._keys: dict[str, str] = {}
        self.legacy_settings_key = _digest([*self._common, repr(self.reader_options)])
        """The one key versions before per-file keys recorded for every file of a run (all reader
        options in it). A file recorded with it under the same options is unchanged, so upgrading
        re-reads nothing."""

    def settings_for(self, path: str | os.PathLike[str]) -> str:
        """The settings key recorded for the file at `path`: a file is read again when it changes.

        It covers the splitter, the embedder, `--meta`, `embed_context` and the reader the file's suffix
        gets with the options that reader uses (`ingest.readers.registry.reader_key`).

        Example:
            >>> from rag import HashingEmbedding
            >>> from stores import NumpyVectorStore
            >>> from ingest.splitters import RecursiveSplitter
            >>> def pipeline(*suffixes: str) -> IngestPipeline:
            ...     options = ReaderOptions(text_suffixes=suffixes)
            ...     return IngestPipeline(NumpyVectorStore(HashingEmbedding()), RecursiveSplitter(200, 20),
            ...                           reader_options=options)
            >>> pipeline().settings_for("a.md") == pipeline(".cfg").settings_for("a.md")
            True
            >>> pipeline().settings_for("a.cfg") == pipeline(".cfg").settings_for("a.cfg")
            False
        """
        treatment = reader_key(file_suffix(path), self.reader_options)  # as read_file picks
        key = self._keys.get(treatment)
        if key is None:
            key = self._keys[treatment] = _digest([*self._common, treatment])
        return key

    def run(
        self,
        paths: Sequence[str | os.PathLike[str]],
        *,
        include: Iterable[str] = (),
        exclude: Iterable[str] = (),
        prune: bool = True,
        follow_symlinks: bool = False,
        forget_unread: bool = False,
    ) -> IngestReport:
        """Bring the store up to date with `paths`; returns what was done.

        Each file is identified by its root and its path in it (see `ingest.identity`): a folder given
        becomes a root unless a recorded root contains it. Pruning (files gone since the last run) only
        touches the folders walked. Symbolic links leaving a folder are skipped and reported unless
        `follow_symlinks`.

        A stored file that no reader takes any more (read with `ReaderOptions.text_suffixes` on an
        earlier run, and not now) keeps its chunks and is reported as skipped, with the option that read
        it; `forget_unread` removes such files instead.

        Raises:
            IngestError: a path that does not exist.
            StoreError, EmbeddingError: the store or the model failed (the run stops; the next one resumes).
        """
        return traced_ingest(
            paths, lambda: self._run(paths, include, exclude, prune, follow_symlinks, forget_unread)
        )

    def _run(
        self,
        paths: Sequence[str | os.PathLike[str]],
        include: Iterable[str],
        exclude: Iterable[str],
        prune: bool,
        follow_symlinks: bool,
        forget_unread: bool,
    ) -> IngestReport:
        found = walk(paths, include, exclude, follow_symlinks=follow_symlinks)
        run = Run(self, found, forget_unread=forget_unread)
        try:
            run.execute(prune=prune)
        except BaseException:
            # Keep what is complete (Ctrl-C, a store failure); pending ids cover a half-written batch.
            with contextlib.suppress(Exception):
                run.checkpoint()
            raise
        run.checkpoint(final=True)
        return run.report
