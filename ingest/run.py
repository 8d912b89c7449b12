"""One run of `ingest.pipeline.IngestPipeline`: examine each walked file, read and split the new and changed
ones, embed and write their chunks in batches, prune what is gone, and checkpoint the manifest.

`IngestPipeline.run` creates a `Run` per call; the run reads the pipeline's settings through the
`RunSettings` protocol (so this module does not import the pipeline).
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ingest.chunking import PreparedChunk, Splitter, embedding_input, make_chunks
from ingest.identity import Base, RootResolver, escape_name, prunable, source_id
from ingest.manifest import Manifest, ManifestEntry, ManifestState
from ingest.progress import ProgressEvent
from ingest.readers import ReaderOptions, SkippedFile, read_file
from ingest.readers.registry import check_size, file_suffix, reader_key, source_digest
from ingest.report import FileReport, FileStatus, IngestReport
from ingest.walk import Walk
from rag.documents import Document, MetadataValue
from rag.errors import IngestError
from rag.vectorstore import VectorStore

__all__ = ["Run", "RunSettings"]


class RunSettings(Protocol):
    """What a run reads from its pipeline (`ingest.pipeline.IngestPipeline` has these attributes)."""

    store: VectorStore
    splitter: Splitter
    manifest: Manifest
    flush: Callable[[], None] | None
    reader_options: ReaderOptions
    extra_metadata: dict[str, MetadataValue]
    on_progress: Callable[[ProgressEvent], None] | None
    batch_size: int
    checkpoint_s: float
    embed_context: bool
    legacy_settings_key: str

    def settings_for(self, path: str) -> str: ...


@dataclass(frozen=True)
class _File:
    """A walked file with its identity: the root's label and its path relative to that root."""

    fspath: str
    top: Path  # the folder walked (a file named directly: its folder); includes resolve within it
    root: str
    rel: str
    id: str  # source_id(root, rel), computed once: it is read several times per file
    escaped: bool = False  # the name is not valid UTF-8: `rel` writes its odd bytes as \xNN


@dataclass
class _Work:
    """A new or changed file, read and split, waiting to be embedded and written."""

    file: _File
    entry: ManifestEntry
    chunks: list[PreparedChunk]
    old: ManifestEntry | None
    report: FileReport
    fresh: list[PreparedChunk] = field(default_factory=list)


class Run:
    """The state of one `IngestPipeline.run` call."""

    def __init__(self, pipeline: RunSettings, found: Walk, *, forget_unread: bool = False) -> None:
        self.p = pipeline
        self.found = found
        self.forget_unread = forget_unread
        self.report = IngestReport()
        self.started = time.perf_counter()
        self.last_checkpoint = self.started
        self.batch: list[_Work] = []
        self.batch_chunks = 0
        self.files_done = 0
        self.dirty = False  # the store changed since the last flush
        self.truncated_before = int(getattr(pipeline.splitter, "truncated_chunks", 0))
        self.resolver = RootResolver(pipeline.manifest)
        self.folder_roots = set(found.folder_roots)
        self.bases: dict[str, Base] = {}

    # -- driving ---------------------------------------------------------------------------------------

    def execute(self, *, prune: bool) -> None:
        manifest = self.p.manifest
        if manifest.reconcile():
            manifest.commit()
        states = manifest.states()
        self._emit("start")
        for root, walked, reason in self.found.errors:
            label, rel = self._base(root).identify(walked)
            self.report.add(FileReport(rel, "failed", reason=reason, root=label))
        for root, walked, reason in self.found.skipped:
            label, rel = self._base(root).identify(walked)
            self.report.add(FileReport(rel, "skipped", reason=reason, root=label))
        seen: set[str] = set()
        for found in self.found.files:
            label, rel = self._base(found.root).identify(found.source)
            file = _File(
                found.fspath,
                found.root,
                label,
                rel,
                source_id(label, rel),
                escape_name(found.source) != found.source,
            )
            if file.id not in seen:  # the same file reached from two paths given: one source
                seen.add(file.id)
                self._examine(file, states.get(file.id))
            self.files_done += 1
            self._emit("file", file.id)
        self._write_batch()
        if prune:
            self._prune(states, seen)
        self.report.truncated_chunks = (
            int(getattr(self.p.splitter, "truncated_chunks", 0)) - self.truncated_before
        )

    def _base(self, walked_root: Path) -> Base:
        """The identity of a walked folder (or of a file's folder), resolved once per run."""
        key = str(walked_root)
        base = self.bases.get(key)
        if base is None:
            base = self.resolver.base(walked_root, folder=walked_root in self.folder_roots)
            self.bases[key] = base
        return base

    def checkpoint(self, *, final: bool = False) -> None:
        """Make the store durable, then commit the manifest (in that order: the store may hold more
        than the manifest says, never less)."""
        if self.p.flush is not None and self.dirty:
            self.p.flush()
            self.dirty = False
        self.p.manifest.commit()
        self.last_checkpoint = time.perf_counter()
        if final:
            self.report.elapsed_s = time.perf_counter() - self.started
            self._emit("done")

    def _emit(self, phase: Any, source: str | None = None) -> None:
        if self.p.on_progress is not None:
            self.p.on_progress(
                ProgressEvent(
                    phase,
                    self.files_done,
                    len(self.found.files),
                    self.report.chunks_embedded,
                    time.perf_counter() - self.started,
                    source,
                )
            )

    # -- one file --------------------------------------------------------------------------------------

    def _examine(self, file: _File, old: ManifestState | None) -> None:
        try:
            info = os.stat(file.fspath)
        except OSError as exc:
            status = "skipped" if os.path.islink(file.fspath) else "failed"
            reason = "broken symbolic link" if status == "skipped" else f"cannot read: {exc.strerror or exc}"
            self._note(file, status, reason)  # type: ignore[arg-type]
            return
        if not stat.S_ISREG(info.st_mode):
            self._note(file, "skipped", "not a regular file")
            return
        if old is not None and old.n_chunks and not self.forget_unread and self._unread(file, old):
            return
        root = file.root
        key = self.p.settings_for(file.fspath)
        # A row from before per-file keys holds the whole run's key: the same options, the same reading.
        kept = old if old is not None and old.settings in (key, self.p.legacy_settings_key) else None
        if kept is not None and (kept.size, kept.mtime_ns) == (info.st_size, info.st_mtime_ns):
            self._unchanged(file, kept, root, info)
            return
        if reader_key(file_suffix(file.fspath), self.p.reader_options) != "unsupported":
            try:
                check_size(info.st_size, file.rel, self.p.reader_options)
            except IngestError as exc:  # refused before reading: its bytes are never all in memory
                self._note(file, "failed", str(exc))
                return
        try:
            with open(file.fspath, "rb") as handle:
                data = handle.read()
        except OSError as exc:
            self._note(file, "failed", f"cannot read: {exc.strerror or exc}")
            return
        # A page that includes other files records no size: every run compares it by `source_digest`,
        # which covers the files it includes, since a change to them changes it.
        sha, shared = source_digest(Path(file.fspath), file.top, data, self.p.reader_options)
        size = -1 if shared else info.st_size
        if kept is not None and kept.sha256 == sha:
            self._unchanged(file, kept, root, info, size)
            return
        entry = ManifestEntry(file.id, root, size, info.st_mtime_ns, sha, key, (), ())
        self._read_and_split(file, entry, None if old is None else self.p.manifest.get(file.id), data)
        del data  # the bytes, the text and the units are gone before the batch is embedded: only chunks
        if self.batch_chunks >= self.p.batch_size:
            self._write_batch()

    def _unread(self, file: _File, old: ManifestState) -> bool:
        """Keep (and report) a stored file no reader takes any more: an `--as-text` option left out.

        Only `--as-text` makes a reader take a suffix no reader is registered for, so a stored file with
        such a suffix was read through it. Leaving the option out of a later run must not delete it.
        """
        suffix = file_suffix(file.fspath)
        if reader_key(suffix, self.p.reader_options) != "unsupported":
            return False
        option = f"--as-text {suffix.lower() or '.'}"
        report = self._note(
            file,
            "skipped",
            f"unsupported file type {suffix.lower() or '(no suffix)'!r}; its chunks from a run with "
            f"{option} are kept (give {option} again, or --forget-unread to remove them)",
        )
        report.chunks = old.n_chunks
        return True

    def _note(self, file: _File, status: FileStatus, reason: str) -> FileReport:
        """Report a file that was not read (failed or skipped), with why."""
        report = FileReport(file.rel, status, reason=reason, root=file.root)
        self.report.add(report)
        return report

    def _unchanged(
        self, file: _File, old: ManifestState, root: str, info: os.stat_result, size: int | None = None
    ) -> None:
        size = info.st_size if size is None else size
        if (old.root, old.size, old.mtime_ns) != (root, size, info.st_mtime_ns):
            self.p.manifest.touch(file.id, root, size, info.st_mtime_ns)
        self.report.add(FileReport(file.rel, "unchanged", chunks=old.n_chunks, root=file.root))

    def _read_and_split(
        self, file: _File, entry: ManifestEntry, old: ManifestEntry | None, data: bytes
    ) -> None:
        # A row never committed (only pending ids from an interrupted run) still counts as new.
        status = "new" if old is None or old.settings == "" else "changed"
        report = FileReport(file.rel, status, root=file.root)  # type: ignore[arg-type]
        try:
            path = Path(file.fspath)
            result = read_file(path, root=file.top, options=self.p.reader_options, data=data, source=file.rel)
            chunks = make_chunks(
                file.rel,
                result.units,
                self.p.splitter,
                self.p.extra_metadata,
                root=file.root,
                embed_context=self.p.embed_context,
            )
        except SkippedFile as exc:
            self._note(file, "skipped", exc.reason)
            if old is not None:
                self._forget(old)
            return
        except IngestError as exc:
            self._note(file, "failed", str(exc))
            return
        except Exception as exc:  # a splitter or metadata bug on one file must not end the run
            self._note(file, "failed", f"{type(exc).__name__}: {exc}")
            return
        if result.errors and not result.units:  # nothing readable: the file failed
            more = f" (+{len(result.errors) - 1} more)" if len(result.errors) > 1 else ""
            self._note(file, "failed", result.errors[0] + more).errors = list(result.errors)
            return
        report.pages_without_text = result.pages_without_text
        report.warnings = list(result.warnings)
        if file.escaped:
            report.warnings.insert(0, f'file name is not valid UTF-8; recorded as "{file.rel}"')
        report.errors = list(result.errors)
        report.chunks = len(chunks)
        entry = ManifestEntry(
            entry.source,
            entry.root,
            # A file with unreadable parts is read again next run (no size or hash recorded), so its
            # errors are reported until it is fixed; its unchanged chunks are not embedded again.
            -1 if result.errors else entry.size,
            entry.mtime_ns,
            "" if result.errors else entry.sha256,
            entry.settings,
            tuple(c.id for c in chunks),
            tuple(c.digest for c in chunks),
        )
        if (
            result.errors
            and old is not None
            and (old.size, old.sha256, old.settings) == (-1, "", entry.settings)
            and (old.chunk_ids, old.digests) == (entry.chunk_ids, entry.digests)
        ):  # read again for its errors, the same chunks as stored: nothing to embed or write
            report.status = "unchanged"
            self.report.add(report)
            return
        known = set(old.digests) if old is not None else set()
        work = _Work(file, entry, chunks, old, report, [c for c in chunks if c.digest not in known])
        self.report.add(report)
        self.batch.append(work)
        self.batch_chunks += len(work.fresh)

    # -- writing ---------------------------------------------------------------------------------------

    def _write_batch(self) -> None:
        if not self.batch:
            return
        batch, self.batch, self.batch_chunks = self.batch, [], 0
        manifest, store = self.p.manifest, self.p.store
        manifest.mark_pending_many((w.entry.source, w.entry.root, w.entry.chunk_ids) for w in batch)
        if self.p.flush is None:
            manifest.commit()  # a store that writes through: the pending ids must be durable first
        fresh = [c for work in batch for c in work.fresh]
        self.dirty = True
        for start in range(0, len(fresh), self.p.batch_size):
            part = fresh[start : start + self.p.batch_size]
            inputs = [embedding_input(c.text, c.metadata) if self.p.embed_context else c.text for c in part]
            vectors = store.embedding.embed(inputs)
            self.report.chunks_embedded += len(part)
            store.add(
                [Document(c.id, c.text, c.metadata, embedding=v) for c, v in zip(part, vectors, strict=True)]
            )
            self.report.chunks_written += len(part)
        stale: list[str] = []
        for work in batch:
            if work.old is not None:
                keep = set(work.entry.chunk_ids)
                stale.extend(i for i in work.old.chunk_ids if i not in keep)
        if stale:
            self.report.chunks_deleted += store.delete(stale)
        for work in batch:
            work.report.embedded = len(work.fresh)
        manifest.put_many(work.entry for work in batch)
        if self.p.flush is None:
            manifest.commit()
        elif time.perf_counter() - self.last_checkpoint >= self.p.checkpoint_s:
            self.checkpoint()
        self._emit("write")

    def _forget(self, old: ManifestEntry) -> None:
        if old.chunk_ids:
            self.dirty = True
            self.report.chunks_deleted += self.p.store.delete(list(old.chunk_ids))
        self.p.manifest.remove(old.source)

    def _prune(self, states: dict[str, ManifestState], seen: set[str]) -> None:
        scopes = [scope for root in self.found.folder_roots for scope in self._base(root).scopes()]
        unreadable = [self._base(root).identify(walked) for root, walked, _ in self.found.errors]
        pruned = False
        for source in prunable(states, seen, scopes, unreadable):
            entry = self.p.manifest.get(source)
            if entry is not None and not self._on_disk(entry):
                self._forget(entry)
                self.report.add(
                    FileReport(entry.relative, "deleted", chunks=len(entry.chunk_ids), root=entry.root)
                )
                pruned = True
        if pruned:
            self._emit("prune")

    def _on_disk(self, entry: ManifestEntry) -> bool:
        """Whether a stored file not read this run is still there: `--include` / `--exclude` left it
        out, or it was skipped. Such a file keeps its chunks; only a file gone from the disk is pruned."""
        folder = self.resolver.roots.get(entry.root)
        return folder is not None and os.path.lexists(os.path.join(folder, entry.relative))
