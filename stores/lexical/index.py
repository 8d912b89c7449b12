"""A BM25 index over (id, text) pairs, kept beside a vector store and updated by the same writes.

Scoring is Okapi BM25 with Lucene's idf:

    score(d, q) = sum over query terms t of  qtf(t) * idf(t) * tf(t, d) * (k1 + 1) / (tf(t, d) + K(d))
    K(d) = k1 * (1 - b + b * |d| / avgdl)
    idf(t) = log(1 + (N - df(t) + 0.5) / (df(t) + 0.5))

where `|d|` counts the document's terms after analysis (stopwords dropped), `qtf` is how often the term
appears in the query, and N, df and avgdl describe the live documents exactly after any sequence of
adds and deletes. `tf(t, d)` counts the term in the text plus `FIELD_WEIGHT` times in the names field
(title, headings, path: `stores.lexical.fields`). In an index holding several languages, a document
is scored with the query analysed in its own language, N and df counted among that language's
documents (`stores.lexical.searching`). Every hit has at least one query term, so every score is
> 0. (Lucene >= 8 drops the constant `k1 + 1` factor; rankings are the same.) Text analysis is
described in `stores.lexical.text`.

Layout: rows are assigned in order of arrival; postings live in immutable term-major segments
(`stores.lexical.segments`) whose sizes stay geometric, so an add costs the size of its batch plus
amortised merges, never a rebuild; a delete clears a bit in the live-row mask; document frequencies are
counted from the live postings of each query term at search time, so they are never stale. When dead
rows outnumber live ones, rows are renumbered (compacted).

Searches are in `stores.lexical.searching`, which this class inherits.

Thread safety: searches only read, and may run concurrently with each other; writes (`add`, `delete`,
`clear`, `compact`) must not overlap anything else. The stores hold their write lock around both.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

import stores.lexical.segments as segments_module
from rag.documents import MetadataValue
from rag.errors import InvalidRequestError
from stores.lexical.fields import encode_documents, is_marker
from stores.lexical.idmap import PackedIds
from stores.lexical.persist import Saved, read, read_settings, write
from stores.lexical.searching import IndexSearch
from stores.lexical.segments import Segment, build, merge, split
from stores.lexical.settings import DEFAULT_B, DEFAULT_K1, LexicalSettings, LexicalStats
from stores.lexical.text import TOKENIZER, Vocabulary

__all__ = ["DEFAULT_B", "DEFAULT_K1", "LexicalIndex", "LexicalSettings", "LexicalStats"]

_COMPACT_MIN_DEAD = 1024  # renumber rows once this many are dead and they outnumber the live ones
_MERGE_RATIO = 2  # merge the newest segment into its neighbour while that neighbour is at most 2x larger


_NO_METADATA: Mapping[str, MetadataValue] = {}


def _check_batch(
    ids: Sequence[str], texts: Sequence[str], metadatas: Sequence[Mapping[str, MetadataValue]] | None
) -> dict[str, tuple[str, Mapping[str, MetadataValue]]]:
    if isinstance(ids, str) or isinstance(texts, str):
        raise InvalidRequestError(f"ids and texts must be sequences of str, got {ids!r} and {texts!r}")
    if len(ids) != len(texts):
        raise InvalidRequestError(f"got {len(ids)} ids but {len(texts)} texts")
    if metadatas is not None and len(metadatas) != len(ids):
        raise InvalidRequestError(f"got {len(ids)} ids but {len(metadatas)} metadata mappings")
    batch: dict[str, tuple[str, Mapping[str, MetadataValue]]] = {}
    for at, (doc_id, text) in enumerate(zip(ids, texts, strict=True)):
        if not isinstance(doc_id, str) or not doc_id:
            raise InvalidRequestError(f"document id must be a non-empty str, got {doc_id!r}")
        if not isinstance(text, str):
            raise InvalidRequestError(f"text of document {doc_id!r} must be a str, got {text!r}")
        metadata = _NO_METADATA if metadatas is None else metadatas[at]
        if not isinstance(metadata, Mapping):
            raise InvalidRequestError(f"metadata of document {doc_id!r} must be a mapping, got {metadata!r}")
        batch[doc_id] = (text, metadata)  # a repeated id keeps its last text, as an upsert would
    return batch


def _narrow_lengths(
    lengths: npt.NDArray[np.integer[Any]], held: npt.NDArray[np.integer[Any]] | None = None
) -> npt.NDArray[np.integer[Any]]:
    """Document lengths as uint16 (2 bytes a row) while every one fits, else int32: a chunk rarely holds
    65,536 terms. With `held`, the index's current array, widened if `lengths` need it (else as is)."""
    top = int(lengths.max(initial=0))
    wide = top > 0xFFFF or (held is not None and held.dtype == np.int32)
    dtype = np.int32 if wide else np.uint16
    if held is not None:
        return held if held.dtype == dtype else held.astype(dtype)
    return lengths.astype(dtype)


class LexicalIndex(IndexSearch):
    """BM25 search over documents' texts, upserted and deleted by id.

    Example:
        >>> index = LexicalIndex()
        >>> index.add(["a", "b"], ["Vectors live on disk.", "Chroma stores vectors and metadata."])
        >>> [doc_id for doc_id, _ in index.search("where do vectors live?", top_k=5)]
        ['a', 'b']
        >>> index.search("metadata", top_k=5, allowed={"a"})
        []
    """

    def __init__(self, k1: float = DEFAULT_K1, b: float = DEFAULT_B) -> None:
        self._settings = LexicalSettings(k1, b)
        self._renumberings = -1
        self.clear()

    # ----- state -----------------------------------------------------------------------------------

    def clear(self) -> None:
        """Remove every document."""
        self._vocabulary = Vocabulary()
        self._ids = PackedIds()  # ids by row, live rows, id -> live row (`stores.lexical.idmap`)
        self._lengths = _narrow_lengths(np.zeros(0, np.int64))  # terms per row (see `_narrow_lengths`)
        self._segments: list[Segment] = []
        self._total_length = 0
        self._norm: npt.NDArray[np.float64] | None = None
        self._held_languages: dict[str, tuple[npt.NDArray[np.bool_] | None, int]] | None = None
        self._renumberings += 1
        self._renumbered: npt.NDArray[np.int64] | None = None

    @property
    def settings(self) -> LexicalSettings:
        """k1, b and the tokenizer name."""
        return self._settings

    @property
    def row_count(self) -> int:
        """Size of the row space (live and dead rows): the length of a `row_mask`."""
        return self._ids.row_count

    @property
    def renumberings(self) -> int:
        """How often rows were renumbered (by `compact`, `clear` or a load): rows from `rows_of` stay
        valid while this number is unchanged, across adds and deletes."""
        return self._renumberings

    @property
    def last_renumbering(self) -> npt.NDArray[np.int64] | None:
        """The new row of each old row (-1 for dead rows) at the latest `compact`, or None after a
        `clear`: lets a caller that keeps rows follow the renumbering without looking ids up."""
        return self._renumbered

    @property
    def segment_count(self) -> int:
        """Number of postings segments (logarithmic in the number of rows)."""
        return len(self._segments)

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, doc_id: object) -> bool:
        return isinstance(doc_id, str) and int(self._ids.rows_of([doc_id])[0]) >= 0

    def ids(self) -> list[str]:
        """Ids of the live documents, ascending."""
        return sorted(self._ids.live_ids())

    def id_at(self, row: int) -> str:
        """The id of a live `row` (see `rows_of`)."""
        return self._ids.id_at(row)

    def ids_at(self, rows: Iterable[int]) -> list[str]:
        """The id of each of the live `rows`."""
        return self._ids.ids_at(rows)

    def document_frequencies(self) -> dict[str, int]:
        """df of every term held by a live document (for inspection and tests; scans every posting)."""
        counts = np.zeros(len(self._vocabulary), dtype=np.int64)
        for segment in self._segments:
            live = self._live[segment.absolute_rows()]
            terms = np.repeat(segment.terms, np.diff(segment.starts))
            counts += np.bincount(terms[live], minlength=counts.size)
        names = self._vocabulary.terms
        found = ((names[index], int(counts[index])) for index in np.flatnonzero(counts))
        return {term: df for term, df in found if not is_marker(term)}

    # ----- writes ------------------------------------------------------------------------------------

    def add(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        metadatas: Sequence[Mapping[str, MetadataValue]] | None = None,
    ) -> None:
        """Index `texts` under `ids`, replacing documents with the same ids.

        `metadatas` (the documents' metadata, default none) give each text's language (`lang`) and its
        names field: `title`, `headings` and the `source` path (`stores.lexical.fields`).
        """
        batch = _check_batch(ids, texts, metadatas)
        if not batch:
            return
        self._kill(batch)
        pairs = list(batch.values())
        encoded = encode_documents(self._vocabulary, [text for text, _ in pairs], [meta for _, meta in pairs])
        term_ids, owners, lengths = encoded.ids, encoded.owners, encoded.lengths
        first_row = self._ids.row_count
        self._grow(first_row + len(batch))
        self._ids.append(list(batch))  # live from now on
        self._lengths = _narrow_lengths(lengths, self._lengths)
        self._lengths[first_row : first_row + len(batch)] = lengths
        self._total_length += int(lengths.sum())
        self._segments.extend(split(build(term_ids, owners, len(batch), first_row)))
        self._merge_tail()
        self._norm = None
        self._held_languages = None
        self._maybe_compact()

    def delete(self, ids: Iterable[str]) -> int:
        """Remove documents by id (unknown ids ignored); returns how many were removed."""
        if isinstance(ids, str):
            raise InvalidRequestError(f"ids must be a collection of str, not one str: {ids!r}")
        removed = self._kill(ids)
        if removed:
            self._norm = None
            self._held_languages = None
            self._maybe_compact()
        return removed

    def compact(self) -> None:
        """Renumber rows without gaps and merge all postings into one segment (done automatically)."""
        live = self._live[: self._ids.row_count]
        new_row = np.cumsum(live, dtype=np.int64) - 1
        # Documents without a term leave no postings: their rows are renumbered all the same.
        self._segments = split(merge(self._segments, live, new_row)) if self._segments else []
        self._renumbered = np.where(live, new_row, -1)
        self._ids.renumber()  # `live` stays a view of the old mask
        self._lengths = self._lengths[: live.size][live].copy()
        self._norm = None
        self._renumberings += 1

    def _kill(self, ids: Iterable[str]) -> int:
        rows = self._ids.kill(ids)  # no longer live
        self._total_length -= int(self._lengths[rows].sum())
        return len(rows)

    def _grow(self, rows: int) -> None:
        if rows <= self._lengths.size:
            return
        capacity = max(rows, 2 * self._lengths.size, 64)
        spare = np.zeros(capacity - self._lengths.size, self._lengths.dtype)
        self._lengths = np.concatenate([self._lengths, spare])

    def _merge_tail(self) -> None:
        segments = self._segments
        # Merged segments stay within NARROW_SPAN rows, so their rows keep two bytes each.
        while (
            len(segments) >= 2
            and segments[-2].size <= _MERGE_RATIO * max(segments[-1].size, 1)
            and segments[-1].end_row - segments[-2].first_row <= segments_module.NARROW_SPAN
        ):
            segments[-2:] = [merge(segments[-2:], self._live)]

    def _maybe_compact(self) -> None:
        dead = self._ids.row_count - len(self._ids)
        if dead >= _COMPACT_MIN_DEAD and dead > len(self._ids):
            self.compact()

    # ----- persistence -------------------------------------------------------------------------------

    def save(self, folder: str | os.PathLike[str]) -> None:
        """Write the index into `folder` atomically (a crash leaves the previous save loadable)."""
        write(folder, self.saved())

    def saved(self) -> Saved:
        """What a save holds: the live documents renumbered from 0, their postings in one segment."""
        live = self._live[: self._ids.row_count]
        if self._segments:
            segment = merge(self._segments, live, np.cumsum(live, dtype=np.int64) - 1)
        else:
            segment = build(np.zeros(0, np.int32), np.zeros(0, np.int64), 0, 0)
        ids = self._ids.live_ids()
        lengths = self._lengths[: live.size][live].astype(np.int64)
        settings = {"k1": self._settings.k1, "b": self._settings.b, "tokenizer": self._settings.tokenizer}
        return Saved(settings, self._vocabulary.terms, ids, lengths, segment)

    @staticmethod
    def saved_settings(folder: str | os.PathLike[str]) -> LexicalSettings | None:
        """The settings of the index saved in `folder`, or None when there is none."""
        found = read_settings(folder)
        return None if found is None else LexicalSettings(found["k1"], found["b"], found["tokenizer"])

    @classmethod
    def load(cls, folder: str | os.PathLike[str], settings: LexicalSettings | None = None) -> LexicalIndex:
        """The index saved in `folder`, scored with `settings` (default: the saved k1 and b).

        Raises:
            StoreNotFoundError: no index was saved there.
            StoreError: an unreadable or inconsistent save, or one made with another tokenizer (whose
                terms this version cannot match: rebuild the index from the documents' texts).
        """
        return cls.from_saved(read(folder, TOKENIZER), settings)

    @classmethod
    def from_saved(cls, saved: Saved, settings: LexicalSettings | None = None) -> LexicalIndex:
        """The index `saved` describes (`saved()`, or `stores.lexical.persist.from_arrays`)."""
        chosen = settings or LexicalSettings(saved.settings["k1"], saved.settings["b"])
        if chosen.tokenizer != TOKENIZER:
            raise InvalidRequestError(
                f"this version analyses text with tokenizer {TOKENIZER!r}, not {chosen.tokenizer!r}"
            )
        index = cls(chosen.k1, chosen.b)
        index._restore(saved)
        return index

    def _restore(self, saved: Saved) -> None:
        self._vocabulary = Vocabulary(saved.terms)
        self._ids = PackedIds()
        self._ids.append(saved.ids)
        self._lengths = _narrow_lengths(saved.lengths)
        self._total_length = int(self._lengths.sum())
        self._segments = split(saved.segment)  # every array narrowed, as `add` builds them
        self._norm = None
        self._held_languages = None
