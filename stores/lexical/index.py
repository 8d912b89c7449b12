"""A BM25 index over (id, text) pairs, kept beside a vector store and updated by the same writes.

Scoring is Okapi BM25 with Lucene's idf:

    score(d, q) = sum over query terms t of  qtf(t) * idf(t) * tf(t, d) * (k1 + 1) / (tf(t, d) + K(d))
    K(d) = k1 * (1 - b + b * |d| / avgdl)
    idf(t) = log(1 + (N - df(t) + 0.5) / (df(t) + 0.5))

`|d|` counts the document's terms after analysis, `qtf` how often the term appears in the query, and
N, df and avgdl describe the live documents exactly after any sequence of writes. `tf(t, d)` counts
the term in the text plus `FIELD_WEIGHT` times in the names field (`stores.lexical.fields`). A
document is scored with the query analysed in its own language; the df of a query word counts the
documents of every language that hold it as their analysis spells it, and all of a language's documents
when that language drops it as a stop word (`stores.lexical.text.query_idfs`), so that scores compare
across languages. Every hit holds a query term, so every score is > 0.

Rows are assigned in order of arrival and postings kept in segments (`stores.lexical.segments`) of
geometric sizes; a delete clears a row's live bit, and rows are renumbered once most are dead.
Thread safety: searches only read and may run together; writes must not overlap anything else (the
stores hold their write lock around both).
"""

from __future__ import annotations

import copy
import os
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from rag.documents import MetadataValue
from rag.errors import InvalidRequestError
from stores.lexical.fields import encode_documents, is_marker, language_marker
from stores.lexical.idmap import PackedIds
from stores.lexical.languages import DEFAULT_LANGUAGE, SNOWBALL
from stores.lexical.persist import DEFAULT_B, DEFAULT_K1, LexicalSettings, Saved, read, write
from stores.lexical.segments import NARROW_SPAN, Segment, build, merge, postings_of, split
from stores.lexical.text import TOKENIZER, Vocabulary, query_idfs
from stores.ties import best_first

__all__ = ["DEFAULT_B", "DEFAULT_K1", "LexicalIndex", "LexicalSettings", "LexicalStats"]

_COMPACT_MIN_DEAD = 1024  # renumber rows once this many are dead and they outnumber the live ones
_MERGE_RATIO = 2  # merge the newest segment into its neighbour while that one is at most 2x larger

Ints = npt.NDArray[np.integer[Any]]
Rows = npt.NDArray[np.int64]
Scores = npt.NDArray[np.float64]
Languages = dict[str, tuple[npt.NDArray[np.bool_] | None, int]]
_NO_HITS: tuple[Rows, Scores] = (np.zeros(0, np.int64), np.zeros(0, np.float64))


@dataclass(frozen=True)
class LexicalStats:
    """N and the total length (in terms) of the live documents."""

    documents: int
    total_length: int

    @property
    def average_length(self) -> float:
        """avgdl (0 for an empty index)."""
        return self.total_length / self.documents if self.documents else 0.0


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
        metadata = {} if metadatas is None else metadatas[at]
        if not isinstance(metadata, Mapping):
            raise InvalidRequestError(f"metadata of document {doc_id!r} must be a mapping, got {metadata!r}")
        batch[doc_id] = (text, metadata)  # a repeated id keeps its last text, as an upsert would
    return batch


def _narrowest(lengths: Ints, held: Ints | None = None) -> type[np.integer[Any]]:
    """Document lengths take two bytes while every one (and every one `held`) fits, else four."""
    wide = int(lengths.max(initial=0)) > 0xFFFF or (held is not None and held.dtype == np.int32)
    return np.int32 if wide else np.uint16


def _sum_by_row(rows: npt.NDArray[np.integer[Any]], weights: Scores, row_count: int) -> tuple[Rows, Scores]:
    """The distinct `rows` (ascending) and the sum of their weights, each added onto 0.0 in input order
    (as `np.bincount` does on either path, so both give the same sums)."""
    if 4 * rows.size >= row_count:  # posting-heavy: sum over every row
        scores = np.asarray(np.bincount(rows, weights, minlength=row_count), np.float64)
        hits = np.flatnonzero(scores)
        return hits, scores[hits]
    distinct, slots = np.unique(rows, return_inverse=True)
    sums = np.asarray(np.bincount(slots, weights, minlength=distinct.size), np.float64)
    return distinct.astype(np.int64), sums


class LexicalIndex:
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
        self.settings = LexicalSettings(k1, b)
        self._renumberings = -1
        self.clear()

    def clear(self) -> None:
        """Remove every document."""
        self._vocabulary = Vocabulary()
        self._ids = PackedIds()  # ids by row, live rows, id -> live row
        self._lengths: Ints = np.zeros(0, np.uint16)  # terms per row (`_narrowest`)
        self._segments: list[Segment] = []
        self._total_length = 0
        self._renumberings += 1
        self._renumbered: Rows | None = None
        self._changed()

    def _changed(self) -> None:
        self._norm: Scores | None = None  # K(d) of each row, until the next write
        self._languages: Languages | None = None

    @property
    def row_count(self) -> int:
        """Size of the row space (live and dead rows): the length of a `row_mask`."""
        return self._ids.row_count

    @property
    def renumberings(self) -> int:
        """How often rows were renumbered (`compact`, `clear`): rows stay valid while it is unchanged."""
        return self._renumberings

    @property
    def last_renumbering(self) -> Rows | None:
        """The new row of each old row (-1 for dead rows) at the latest `compact`, None after a `clear`."""
        return self._renumbered

    @property
    def segment_count(self) -> int:
        """Number of postings segments (logarithmic in the number of rows)."""
        return len(self._segments)

    @property
    def stats(self) -> LexicalStats:
        """N and the total length of live documents."""
        return LexicalStats(len(self._ids), self._total_length)

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

    def rows_of(self, ids: Iterable[str]) -> Rows:
        """Row of each id (-1 where unknown); valid until the next write. See `search(row_mask=...)`."""
        return self._ids.rows_of(ids if isinstance(ids, Sequence) else list(ids))

    def document_frequencies(self) -> dict[str, int]:
        """df of every term held by a live document (for inspection and tests: it builds a save)."""
        live = self._ids.live_mask[: self._ids.row_count]
        segment = merge(self._segments, live, np.cumsum(live, dtype=np.int64) - 1)
        names = self._vocabulary.terms
        found = zip(segment.terms.tolist(), np.diff(segment.starts).tolist(), strict=True)
        return {names[term]: df for term, df in found if not is_marker(names[term])}

    def languages(self) -> list[str]:
        """The languages (`lang` codes with a stemmer, `stores.lexical.languages`) of the live documents."""
        return list(self._language_rows())

    def add(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        metadatas: Sequence[Mapping[str, MetadataValue]] | None = None,
    ) -> None:
        """Index `texts` under `ids`, replacing documents with the same ids.

        `metadatas` give each text's language (`lang`) and its names field: `title`, `headings` and the
        `source` path (`stores.lexical.fields`).
        """
        batch = _check_batch(ids, texts, metadatas)
        if not batch:
            return
        self._kill(batch)
        pairs = list(batch.values())
        encoded = encode_documents(self._vocabulary, [text for text, _ in pairs], [meta for _, meta in pairs])
        first, end = self._ids.row_count, self._ids.row_count + len(batch)
        dtype = _narrowest(encoded.lengths, self._lengths)
        if end > self._lengths.size or dtype != self._lengths.dtype:
            self._lengths = np.resize(self._lengths.astype(dtype), max(end, 2 * self._lengths.size, 64))
        self._ids.append(list(batch))
        self._lengths[first:end] = encoded.lengths
        self._total_length += int(encoded.lengths.sum())
        segments = self._segments
        segments.extend(split(build(encoded.ids, encoded.owners, len(batch), first)))
        while (  # merged segments stay within NARROW_SPAN rows, so their rows keep two bytes each
            len(segments) >= 2
            and segments[-2].size <= _MERGE_RATIO * max(segments[-1].size, 1)
            and segments[-1].end_row - segments[-2].first_row <= NARROW_SPAN
        ):
            segments[-2:] = [merge(segments[-2:], self._ids.live_mask)]
        self._changed()
        self._maybe_compact()

    def delete(self, ids: Iterable[str]) -> int:
        """Remove documents by id (unknown ids ignored); returns how many were removed."""
        if isinstance(ids, str):
            raise InvalidRequestError(f"ids must be a collection of str, not one str: {ids!r}")
        removed = self._kill(ids)
        if removed:
            self._changed()
            self._maybe_compact()
        return removed

    def compact(self) -> None:
        """Renumber rows without gaps and merge all postings into one segment (done automatically)."""
        live = self._ids.live_mask[: self._ids.row_count]
        new_row = np.cumsum(live, dtype=np.int64) - 1
        self._segments = split(merge(self._segments, live, new_row))
        self._renumbered = np.where(live, new_row, -1)
        self._ids.renumber()  # `live` stays a view of the old mask
        self._lengths = self._lengths[: live.size][live]
        self._changed()
        self._renumberings += 1

    def _kill(self, ids: Iterable[str]) -> int:
        rows = self._ids.kill(ids)
        self._total_length -= int(self._lengths[rows].sum())
        return len(rows)

    def _maybe_compact(self) -> None:
        dead = self._ids.row_count - len(self._ids)
        if dead >= _COMPACT_MIN_DEAD and dead > len(self._ids):
            self.compact()

    def _language_rows(self) -> Languages:
        """Each language of the live documents: its rows (None when it is the only one) and how many."""
        if self._languages is None:
            codes = sorted(SNOWBALL)  # the order every store analyses a query in
            markers = self._vocabulary.ids_of([language_marker(code) for code in codes]).tolist()
            languages: Languages = {}
            for code, (rows, _) in zip(codes, postings_of(self._segments, markers), strict=True):
                if not rows.size:
                    continue
                mask = np.zeros(self._ids.row_count, np.bool_)
                mask[rows] = True
                mask &= self._ids.live_mask[: mask.size]
                if mask.any():
                    languages[code] = (mask, int(np.count_nonzero(mask)))
            if len(languages) == 1:
                languages = {code: (None, len(self._ids)) for code in languages}
            self._languages = languages
        return self._languages

    def _hits(self, query: str) -> tuple[Rows, Scores]:
        """The rows holding a query term (ascending) and their BM25 scores (see the module docstring)."""
        if not isinstance(query, str):
            raise InvalidRequestError(f"query must be a str, got {query!r}")
        count = len(self._ids)
        live = self._ids.live_mask if count < self._ids.row_count else None
        if self._norm is None:
            lengths = self._lengths[: self._ids.row_count].astype(np.float64)
            k1, b = self.settings.k1, self.settings.b
            self._norm = k1 * (1.0 - b + b * lengths / (self.stats.average_length or 1.0))
        held = self._language_rows() or {DEFAULT_LANGUAGE: (None, count)}
        analysed: list[tuple[str, list[int | None]]] = []
        postings: dict[tuple[str, int], tuple[npt.NDArray[np.integer[Any]], Ints]] = {}
        for language, (within, _) in held.items() if count else ():
            term_ids = self._vocabulary.encode_query(query, language)
            wanted = [term for term in dict.fromkeys(term_ids) if term is not None and term >= 0]
            mask = live if within is None else within  # a language's rows are live ones
            for term, (rows, tfs) in zip(wanted, postings_of(self._segments, wanted), strict=True):
                if mask is not None and rows.size:
                    kept = mask[rows]
                    rows, tfs = rows[kept], tfs[kept]
                postings[language, term] = rows, tfs
            analysed.append((language, term_ids))
        frequencies = {key: rows.size for key, (rows, _) in postings.items()}
        documents = {language: held_count for language, (_, held_count) in held.items()}
        row_parts: list[npt.NDArray[np.integer[Any]]] = [np.zeros(0, np.int32)]
        weights: list[Scores] = [np.zeros(0)]
        for language, term, idf in query_idfs(analysed, frequencies, documents):
            held_rows, tfs = postings[language, term]
            tf = tfs.astype(np.float64)
            weights.append(idf * (self.settings.k1 + 1.0) * tf / (tf + self._norm[held_rows]))
            row_parts.append(held_rows)
        return _sum_by_row(np.concatenate(row_parts), np.concatenate(weights), self._ids.row_count)

    def search(
        self,
        query: str,
        top_k: int,
        *,
        allowed: Collection[str] | None = None,
        row_mask: npt.NDArray[np.bool_] | None = None,
    ) -> list[tuple[str, float]]:
        """The `top_k` best (id, BM25 score) pairs, best first, equal scores by ascending id.

        Only documents holding a query term are returned (every score is > 0). `allowed` restricts hits
        to those ids; `row_mask` does the same as a boolean array over `row_count` rows (see `rows_of`).
        """
        wanted = top_k if allowed is None else 4 * top_k
        allowed = allowed if allowed is None or isinstance(allowed, set | frozenset | dict) else set(allowed)
        # Walk down the ranking while that costs less than marking the allowed rows (a selective filter).
        while allowed is None or wanted <= len(allowed):
            rows, scores = self.search_rows(query, wanted, row_mask=row_mask)
            found = zip(self.ids_at(rows.tolist()), scores.tolist(), strict=True)
            hits = [hit for hit in found if allowed is None or hit[0] in allowed]
            if len(hits) >= top_k or rows.size < wanted:
                return hits[:top_k]
            wanted *= 4
        rows = self.rows_of(list(allowed))
        mask = np.zeros(self._ids.row_count, np.bool_)
        mask[rows[rows >= 0]] = True
        return self.search(query, top_k, row_mask=mask if row_mask is None else mask & row_mask)

    def search_rows(
        self, query: str, top_k: int, *, row_mask: npt.NDArray[np.bool_] | None = None
    ) -> tuple[Rows, Scores]:
        """`search` as rows (see `rows_of`) and scores, in the same order; only tied ids are decoded."""
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 0:
            raise InvalidRequestError(f"top_k must be an integer >= 0, got {top_k!r}")
        size = self._ids.row_count
        if row_mask is not None and (row_mask.dtype != np.bool_ or row_mask.shape != (size,)):
            raise InvalidRequestError(
                f"row_mask must be a boolean array of shape ({size},), got {row_mask.dtype} {row_mask.shape}"
            )
        rows, scores = self._hits(query) if top_k else _NO_HITS
        if row_mask is not None:
            kept = row_mask[rows]
            rows, scores = rows[kept], scores[kept]
        if top_k < rows.size:
            kept = scores >= np.partition(scores, scores.size - top_k)[scores.size - top_k]
            rows, scores = rows[kept], scores[kept]  # rows tied with the k-th come along: the id decides
        return best_first(rows, scores, lambda tied: self.ids_at(tied.tolist()), top_k)

    def scores_for(self, query: str, ids: Sequence[str]) -> Scores:
        """BM25 score of each of `ids` for `query` (0 for unknown ids and documents without a query term)."""
        hits, values = self._hits(query)
        scores = np.zeros(self._ids.row_count + 1)  # the last cell answers unknown ids
        scores[hits] = values
        return scores[self.rows_of(ids)]

    def save(self, folder: str | os.PathLike[str]) -> None:
        """Write the index into `folder` atomically (a crash leaves the previous save loadable)."""
        write(folder, self.saved())

    def saved(self) -> Saved:
        """What a save holds: the live documents numbered from 0 and their postings by segment."""
        ids, segments, live = self._ids, self._segments, self._ids.live_mask[: self._ids.row_count]
        lengths = self._lengths[: live.size]
        if len(ids) < live.size:  # dead rows: renumbered in copies
            segments = split(merge(segments, live, np.cumsum(live, dtype=np.int64) - 1))
            ids = copy.copy(ids)
            ids.renumber()
            lengths = lengths[live]
        return Saved(self.settings, self._vocabulary.packed, ids, lengths, segments)

    @classmethod
    def load(cls, folder: str | os.PathLike[str], settings: LexicalSettings | None = None) -> LexicalIndex:
        """The index saved in `folder`, scored with `settings` (default: the saved k1 and b).

        Raises:
            StoreNotFoundError: no index was saved there.
            StoreError: an unreadable or inconsistent save, or one made with another tokenizer (rebuild
                the index from the documents' texts).
        """
        return cls.from_saved(read(folder, TOKENIZER), settings)

    @classmethod
    def from_saved(cls, saved: Saved, settings: LexicalSettings | None = None) -> LexicalIndex:
        """The index `saved` describes (`saved()`, or `stores.lexical.persist.from_arrays`)."""
        chosen = settings or saved.settings
        if chosen.tokenizer != TOKENIZER:
            raise InvalidRequestError(
                f"this version analyses text with tokenizer {TOKENIZER!r}, not {chosen.tokenizer!r}"
            )
        index = cls(chosen.k1, chosen.b)
        index._vocabulary = Vocabulary(saved.terms)
        index._ids = saved.ids
        index._lengths = saved.lengths.astype(_narrowest(saved.lengths))
        index._total_length = int(saved.lengths.sum(dtype=np.int64))
        index._segments = list(saved.segments)
        return index
