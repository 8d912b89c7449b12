"""Searching a `LexicalIndex`: BM25 scores of a query's hits, the top k of them, and ids filters.

This is the read half of `stores.lexical.index.LexicalIndex` (which holds the state and the writes):
a query's terms are looked up in every segment, weighed (`stores.lexical.scoring`), summed per row,
and the best rows kept, equal scores in ascending id order. Searches only read, and run side by side.
Each language the live documents use is searched with the query analysed in it, over its own rows.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

import stores.lexical.scoring as scoring
from rag.errors import InvalidRequestError
from stores.lexical.fields import language_marker
from stores.lexical.idmap import PackedIds
from stores.lexical.languages import DEFAULT_LANGUAGE, SNOWBALL
from stores.lexical.segments import Segment, postings_of
from stores.lexical.settings import LexicalSettings, LexicalStats
from stores.lexical.text import Vocabulary
from stores.ties import best_first

__all__ = ["IndexSearch"]


class IndexSearch:
    """The searches of `stores.lexical.index.LexicalIndex`, over the state that class keeps."""

    _settings: LexicalSettings
    _ids: PackedIds  # ids by row and id -> live row
    _vocabulary: Vocabulary
    _lengths: npt.NDArray[np.integer[Any]]  # terms per row
    _segments: list[Segment]
    _total_length: int
    _norm: npt.NDArray[np.float64] | None  # BM25's length normalisation per row, until the next write
    _held_languages: dict[str, tuple[npt.NDArray[np.bool_] | None, int]] | None  # `_language_rows`

    @property
    def _live(self) -> npt.NDArray[np.bool_]:
        """Which rows are live: the id map's own mask (False past `row_count`), not a copy."""
        return self._ids.live_mask

    @property
    def stats(self) -> LexicalStats:
        """N and the total length of live documents."""
        return LexicalStats(len(self._ids), self._total_length)

    def languages(self) -> list[str]:
        """The languages (`lang` codes with a stemmer, `stores.lexical.languages`) of the live documents."""
        return list(self._language_rows())

    def _language_rows(self) -> dict[str, tuple[npt.NDArray[np.bool_] | None, int]]:
        """Each language of the live documents, which rows hold it (None: every row, one language) and
        how many live documents."""
        if self._held_languages is None:
            codes = sorted(SNOWBALL)  # the order every store analyses a query in
            markers = self._vocabulary.ids_of([language_marker(code) for code in codes])
            held = [(code, term) for code, term in zip(codes, markers.tolist(), strict=True) if term >= 0]
            found = postings_of(self._segments, [term for _, term in held])
            live = self._live
            rows_by_language = {
                code: rows for (code, _), (rows, _) in zip(held, found, strict=True) if live[rows].any()
            }
            masks: dict[str, tuple[npt.NDArray[np.bool_] | None, int]] = {}
            for code, rows in rows_by_language.items():
                if len(rows_by_language) == 1:
                    masks[code] = (None, len(self._ids))
                else:
                    mask = np.zeros(self._ids.row_count, np.bool_)
                    mask[rows] = True
                    mask &= live[: mask.size]
                    masks[code] = (mask, int(np.count_nonzero(mask)))
            self._held_languages = masks
        return self._held_languages

    def rows_of(self, ids: Iterable[str]) -> npt.NDArray[np.int64]:
        """Row of each id (-1 where unknown); valid until the next write. See `search(row_mask=...)`."""
        return self._ids.rows_of(ids if isinstance(ids, Sequence) else list(ids))

    def _norms(self) -> npt.NDArray[np.float64]:
        if self._norm is None:
            k1, b = self._settings.k1, self._settings.b
            average = self.stats.average_length or 1.0
            lengths = self._lengths[: self._ids.row_count].astype(np.float64)
            self._norm = k1 * (1.0 - b + b * lengths / average)
        return self._norm

    def _weights(
        self, query: str
    ) -> tuple[npt.NDArray[np.integer[Any]], npt.NDArray[np.float64], int] | None:
        """Each live posting of the query's terms as (row, its BM25 term weight), term after term, and
        the number of terms found; None without any hit (`stores.lexical.scoring`)."""
        if not isinstance(query, str):
            raise InvalidRequestError(f"query must be a str, got {query!r}")
        count = len(self._ids)
        if not count:
            return None
        live = self._live if count < self._ids.row_count else None
        rows: list[npt.NDArray[np.integer[Any]]] = []
        tfs: list[npt.NDArray[np.integer[Any]]] = []
        factors: list[float] = []
        # Each document is scored with the query analysed in its own language, by BM25 over the
        # documents of that language (N and df counted among them): a stop word of one language, never
        # indexed there, would otherwise look rare to the documents of another.
        held = self._language_rows() or {DEFAULT_LANGUAGE: (None, count)}
        for language, (rows_of_language, documents) in held.items():
            term_counts = self._vocabulary.encode_query(query, language)
            if not term_counts:
                continue
            found = scoring.term_postings(
                self._segments, term_counts, live, documents, self._settings.k1, rows_of_language
            )
            rows += found[0]
            tfs += found[1]
            factors += found[2]
        if not rows:
            return None
        return (*scoring.weights((rows, tfs, factors), self._norms()), len(rows))

    def _scores(self, query: str) -> npt.NDArray[np.float64] | None:
        """BM25 of every row (0 for dead rows and rows without a query term), or None without any hit."""
        found = self._weights(query)
        return None if found is None else scoring.dense_scores(found[0], found[1], self._ids.row_count)

    def _hits(self, query: str) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]] | None:
        """The rows holding a query term (ascending) and their BM25 scores (the sums of `_scores`), or
        None without any hit."""
        found = self._weights(query)
        return None if found is None else scoring.hit_scores(*found, self._ids.row_count)

    def search(
        self,
        query: str,
        top_k: int,
        *,
        allowed: Collection[str] | None = None,
        row_mask: npt.NDArray[np.bool_] | None = None,
    ) -> list[tuple[str, float]]:
        """The `top_k` best (id, BM25 score) pairs, best first, equal scores by ascending id.

        Only documents holding at least one query term are returned (every score is > 0). `allowed`
        restricts hits to those ids (a set is fastest); `row_mask` does the same as a boolean array over
        `row_count` rows (see `rows_of`), for callers that keep the alignment between writes.
        """
        if allowed is None:
            rows, scores = self.search_rows(query, top_k, row_mask=row_mask)
            return list(zip(self._ids.ids_at(rows.tolist()), scores.tolist(), strict=True))
        found = self._candidates(query, top_k, row_mask)
        if found is None:
            return []
        if not isinstance(allowed, set | frozenset | dict):
            allowed = set(allowed)
        return self._best(*found, top_k, allowed)

    def search_rows(
        self, query: str, top_k: int, *, row_mask: npt.NDArray[np.bool_] | None = None
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
        """`search` as rows (see `rows_of`) and scores, without decoding the ids of the hits.

        The order is the same: score descending, equal scores by ascending id (the only ids read).
        """
        found = self._candidates(query, top_k, row_mask)
        if found is None:
            return np.zeros(0, np.int64), np.zeros(0, np.float64)
        candidates, values = found
        if top_k < candidates.size:
            kth = np.partition(values, values.size - top_k)[values.size - top_k]
            kept = values >= kth  # every row tied with the k-th comes along: the id decides
            candidates, values = candidates[kept], values[kept]
        return best_first(candidates, values, self._ids_of_rows, top_k)

    def _ids_of_rows(self, rows: npt.NDArray[np.integer[Any]]) -> list[str]:
        return self._ids.ids_at(rows.tolist())

    def _candidates(
        self, query: str, top_k: int, row_mask: npt.NDArray[np.bool_] | None
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]] | None:
        """The rows that hold a query term (and pass `row_mask`) and their scores, or None."""
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 0:
            raise InvalidRequestError(f"top_k must be an integer >= 0, got {top_k!r}")
        rows = self._ids.row_count
        if row_mask is not None and (row_mask.dtype != np.bool_ or row_mask.shape != (rows,)):
            raise InvalidRequestError(
                f"row_mask must be a boolean array of shape ({rows},), got {row_mask.dtype} {row_mask.shape}"
            )
        found = self._hits(query) if top_k else None
        if found is None:
            return None
        candidates, values = found
        if row_mask is not None:
            kept = row_mask[candidates]
            candidates, values = candidates[kept], values[kept]
        return candidates, values

    def _mask_of(self, allowed: Collection[str]) -> npt.NDArray[np.bool_]:
        mask = np.zeros(self._ids.row_count, dtype=np.bool_)
        rows = self.rows_of(allowed)
        mask[rows[rows >= 0]] = True
        return mask

    def _best(
        self,
        candidates: npt.NDArray[np.int64],
        values: npt.NDArray[np.float64],
        top_k: int,
        allowed: Collection[str] | None,
    ) -> list[tuple[str, float]]:
        """Top `top_k` of `candidates`, widening the look-ahead until enough allowed rows are seen."""
        wanted = top_k if allowed is None else 4 * top_k
        while True:
            if wanted >= candidates.size:
                chosen, chosen_values = candidates, values
            else:
                kth = np.partition(values, values.size - wanted)[values.size - wanted]
                kept = values >= kth  # every row tied with the k-th comes along
                chosen, chosen_values = candidates[kept], values[kept]
            # Only live rows score above 0, so every chosen row has an id.
            found = zip(self._ids.ids_at(chosen.tolist()), chosen_values.tolist(), strict=True)
            pairs = [(doc_id, score) for doc_id, score in found if allowed is None or doc_id in allowed]
            if len(pairs) >= top_k or chosen is candidates:
                pairs.sort(key=lambda pair: (-pair[1], pair[0]))
                return pairs[:top_k]
            if allowed is not None and chosen.size > len(allowed):
                # A selective filter: marking its rows costs less than walking further down the ranking.
                kept = self._mask_of(allowed)[candidates]
                candidates, values, allowed, wanted = candidates[kept], values[kept], None, top_k
                continue
            wanted *= 4

    def scores_for(self, query: str, ids: Sequence[str]) -> npt.NDArray[np.float64]:
        """BM25 score of each of `ids` for `query` (0 for unknown ids and documents without a query term)."""
        scores = self._scores(query)
        out = np.zeros(len(ids), dtype=np.float64)
        if scores is None:
            return out
        rows = self.rows_of(ids)
        known = rows >= 0
        out[known] = scores[rows[known]]
        return out
