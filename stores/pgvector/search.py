"""The pgvector store's `rag.retrieval.ranking.Candidates`: exact top lists from SQL, re-scored in Python.

PostgreSQL orders the rows (a sequential scan by `<#>`, the negative inner product, exact and 0 for
the zero vector; or, approximate, the HNSW index by `<=>`) and Python scores the few candidates again as
every store does: cosines with `stores.numpy.search.exact_scores`, BM25 with the operations of
`stores.lexical.LexicalIndex`. SQL's arithmetic differs in the last bits, so each list is read a little
deeper than asked, and deeper again until no row past the cut can tie with it; the final order is score
descending, id ascending. All queries of one search run in one REPEATABLE READ snapshot.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from stores.lexical.fields import MARKER_PREFIX, language_marker
from stores.lexical.languages import DEFAULT_LANGUAGE
from stores.lexical.text import query_idfs, query_terms
from stores.numpy.search import TOLERANCE, exact_scores
from stores.pgvector.filters import Condition
from stores.pgvector.tables import StoreInfo, Tables

__all__ = ["PgCandidates", "Row"]

_EXTRA = 8  # rows read past the cut, so near-ties with it are seen without a second query
_LEXICAL_EPSILON = 1e-9  # relative: far above SQL's float8 rounding, far below real BM25 gaps
_LEXICAL = (
    "SELECT l.id, l.length, s.tfs, s.score FROM {lexical} l{join}, LATERAL (SELECT array_agg(x.tf ORDER BY "
    "x.o) AS tfs, sum(CASE WHEN x.tf > 0 THEN x.w * x.tf / (x.tf + %s * (1.0 - %s + %s * l.length / %s)) "
    "ELSE 0 END) AS score FROM (SELECT CASE WHEN array_position(l.terms, u.m) IS NULL THEN 0 "
    "ELSE coalesce(l.tfs[array_position(l.terms, u.t)], 0) END::float8 AS tf, u.w, u.o "
    "FROM unnest(%s::text[], %s::float8[], %s::text[]) WITH ORDINALITY AS u(t, w, m, o)) x) s "
    "WHERE l.terms && %s::text[] AND {where} ORDER BY s.score DESC, l.id LIMIT %s"
)


class Row(NamedTuple):
    """A stored document as read for search."""

    id: str
    text: str
    metadata: dict[str, Any]
    embedding: npt.NDArray[np.float32]


def _row(values: Sequence[Any]) -> Row:
    return Row(values[0], values[1], values[2], values[3].to_numpy())


def _needs_more(keys: list[float], depth: int, fetched: int, asked: int, margin: float) -> bool:
    """Whether rows past the `asked` read (keys: lower is better) could still tie with the `depth`-th."""
    if fetched < asked or len(keys) <= depth:
        return False
    ordered = sorted(keys)
    return ordered[-1] <= ordered[depth - 1] + margin


@dataclass
class PgCandidates:
    """Candidate lists for one request inside one REPEATABLE READ transaction on `conn` (the methods are
    `rag.retrieval.ranking.Candidates`'s).

    `query` is the query's unit vector, None for a search that needs no cosine (lexical without a
    threshold); `ef_search` reads vector candidates through HNSW with that width, None exactly.
    """

    conn: Any
    tables: Tables
    condition: Condition
    query: npt.NDArray[np.float32] | None
    text: str
    ef_search: int | None
    _rows: dict[str, Row] = field(default_factory=dict, init=False)

    @functools.cached_property
    def _info(self) -> StoreInfo:
        """Statistics, k1 and b: read by lexical search only, so a vector search costs one query."""
        return self.tables.read_info(self.conn)

    def _cosines(self, rows: Sequence[Row]) -> npt.NDArray[np.float64]:
        assert self.query is not None, "a search without a query vector asked for cosines"
        if not rows:
            return np.zeros(0, np.float64)
        return exact_scores(np.stack([r.embedding for r in rows]), np.arange(len(rows)), self.query)

    def vector(self, depth: int, threshold: float) -> list[tuple[str, float]]:
        if depth == 0:
            return []
        where, params = [self.condition.text], list(self.condition.params)
        if threshold > 0.0:
            where.append("(embedding <#> %s) <= %s")
            params += [self.query, -(threshold - TOLERANCE)]
        # `<=>` is what the HNSW index (vector_cosine_ops) serves; `<#>` never is: an exact scan.
        order = "embedding <#> %s, id" if self.ef_search is None else "embedding <=> %s"
        text = "SELECT id, text, metadata, embedding FROM {docs} WHERE {where} ORDER BY {order} LIMIT %s"
        statement = self.tables.sql(text, where=" AND ".join(where), order=order)
        asked = depth + _EXTRA
        while True:
            # Binary results: a vector arrives as float32 bytes instead of text to parse.
            if self.ef_search is None:
                cursor = self.conn.execute(statement, [*params, self.query, asked], binary=True)
            else:
                with self.conn.pipeline():  # HNSW's settings and the query in one round trip
                    self.conn.execute(
                        "SELECT set_config('hnsw.ef_search', %s, true), "
                        "set_config('hnsw.iterative_scan', 'strict_order', true)",
                        (str(self.ef_search),),
                    )
                    cursor = self.conn.execute(statement, [*params, self.query, asked], binary=True)
            found = [_row(values) for values in cursor.fetchall()]
            scores = self._cosines(found).tolist()
            keys = [-score for score in scores]
            if self.ef_search is not None or not _needs_more(keys, depth, len(found), asked, 2 * TOLERANCE):
                break
            asked *= 4
        self._rows.update((row.id, row) for row in found)
        hits = [
            (row.id, score)
            for row, score in zip(found, scores, strict=True)
            if threshold == 0.0 or score >= threshold
        ]
        return sorted(hits, key=lambda hit: (-hit[1], hit[0]))[:depth]

    def _weights(self) -> tuple[list[str], list[float], list[str]]:
        """Query terms some document holds, with their weight (`query_idfs`) times k1 + 1, and the
        language marker of the documents each counts for: the query is analysed in each language the
        store holds, in the order of `stores.lexical.index` (languages by code, terms by first use)."""
        statement = self.tables.sql("SELECT term, df FROM {terms} WHERE starts_with(term, %s) AND df > 0")
        held = {t[len(MARKER_PREFIX) :]: int(df) for t, df in self.conn.execute(statement, (MARKER_PREFIX,))}
        languages = sorted(held) or [DEFAULT_LANGUAGE]
        analysed = [(language, query_terms(self.text, language)) for language in languages]
        pairs = list(
            dict.fromkeys((t, language) for language, terms in analysed for t in terms if t is not None)
        )
        terms = [term for term, _ in pairs]
        if len(languages) == 1:  # every document: the kept document frequencies
            documents = {languages[0]: self._info.documents}
            statement = self.tables.sql("SELECT term, df FROM {terms} WHERE term = ANY(%s) AND df > 0")
            found = dict(self.conn.execute(statement, (terms,)).fetchall())
            df = {(language, term): found[term] for term, language in pairs if term in found}
        else:  # each language's documents holding the term, as `stores.lexical.index` counts them
            documents = held
            statement = self.tables.sql(
                "SELECT u.t, u.m, (SELECT count(*) FROM {lexical} l WHERE l.terms @> ARRAY[u.t, u.m]) "
                "FROM unnest(%s::text[], %s::text[]) AS u(t, m)"
            )
            markers = [language_marker(language) for _, language in pairs]
            rows = self.conn.execute(statement, (terms, markers)).fetchall()
            df = {(m[len(MARKER_PREFIX) :], t): int(c) for t, m, c in rows if c}
        chosen = query_idfs(analysed, df, documents)
        return (
            [term for _, term, _ in chosen],
            [weight * (self._info.k1 + 1.0) for *_, weight in chosen],
            [language_marker(language) for language, _, _ in chosen],
        )

    @property
    def _average_length(self) -> float:
        info = self._info
        return (info.total_length / info.documents if info.documents else 0.0) or 1.0

    def _bm25(self, length: int, tfs: list[int], weights: list[float]) -> float:
        """BM25 exactly as `LexicalIndex._scores` computes it (same operations, same order)."""
        k1, b = self._info.k1, self._info.b
        norm = k1 * (1.0 - b + b * float(length) / self._average_length)
        score = 0.0
        for tf, weight in zip(tfs, weights, strict=True):
            if tf > 0:
                score += weight * float(tf) / (float(tf) + norm)
        return score

    def lexical(self, depth: int) -> list[tuple[str, float]]:
        terms, weights, markers = self._weights() if depth else ([], [], [])
        if not terms:
            return []
        join = "" if self.condition.text == "TRUE" else " JOIN {docs} d USING (id)"
        statement = self.tables.sql(_LEXICAL.replace("{join}", join), where=self.condition.text)
        k1, b = self._info.k1, self._info.b
        params = [k1, b, b, self._average_length, terms, weights, markers, terms, *self.condition.params]
        asked = depth + _EXTRA
        while True:
            found = self.conn.execute(statement, [*params, asked]).fetchall()
            keys = [-float(score) for *_, score in found]
            margin = _LEXICAL_EPSILON * max(1.0, abs(keys[depth - 1]) if len(keys) >= depth else 1.0)
            if not _needs_more(keys, depth, len(found), asked, margin):
                break
            asked *= 4
        hits = [
            (doc_id, self._bm25(int(length), [int(tf) for tf in tfs], weights))
            for doc_id, length, tfs, _ in found
        ]
        return sorted(hits, key=lambda hit: (-hit[1], hit[0]))[:depth]

    def rows(self, ids: Sequence[str]) -> list[Row]:
        """The stored rows of `ids` (each read once per search)."""
        missing = [doc_id for doc_id in dict.fromkeys(ids) if doc_id not in self._rows]
        if missing:
            statement = self.tables.sql("SELECT id, text, metadata, embedding FROM {docs} WHERE id = ANY(%s)")
            self._rows.update((r[0], _row(r)) for r in self.conn.execute(statement, (missing,), binary=True))
        return [self._rows[doc_id] for doc_id in ids]

    def cosines(self, ids: Sequence[str]) -> npt.NDArray[np.float64]:
        return self._cosines(self.rows(ids))

    def vectors(self, ids: Sequence[str]) -> npt.NDArray[np.float32]:
        return np.stack([row.embedding for row in self.rows(ids)]).astype(np.float32)
