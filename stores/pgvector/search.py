"""The pgvector store's `stores.ranking.Candidates`: exact top lists from SQL, re-scored in Python.

PostgreSQL orders the rows (a sequential scan with `<#>`, the negative inner product, which is exact and
gives the zero vector a score of 0; or, for an approximate store, the HNSW index with `<=>`), and Python
scores the few candidates again the way the other stores do: cosines with
`stores.numpy.search.exact_scores`, BM25 with the formula and operation order of
`stores.lexical.LexicalIndex`. SQL's own arithmetic differs in the last bits, so each list is read a
little deeper than asked and widened until the rows past the cut cannot tie with it; the final order is
then score descending, id ascending, exactly as on every store.

Every query of one search runs in one REPEATABLE READ transaction: one snapshot, never half a write.

Example:
    >>> # with db.transaction(read_only=True) as conn:
    >>> #     source = PgCandidates(conn, names, condition, query_vector, "query text", settings)
    >>> #     rank(request, source)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from rag.errors import InvalidRequestError
from stores.lexical.fields import MARKER_PREFIX, language_marker
from stores.lexical.languages import DEFAULT_LANGUAGE
from stores.lexical.text import query_weights
from stores.numpy.search import TOLERANCE, exact_scores
from stores.pgvector.filters import Condition
from stores.pgvector.schema import StoreInfo, TableNames

__all__ = ["PgCandidates", "Row", "SearchSettings", "vector_array"]

_EXTRA = 8  # rows read past the cut, so near-ties with it are seen without a second query
_LEXICAL_EPSILON = 1e-9  # relative: far above SQL's float8 rounding, far below real BM25 gaps


@dataclass(frozen=True)
class Row:
    """A stored document as read for search."""

    id: str
    text: str
    metadata: dict[str, Any]
    embedding: npt.NDArray[np.float32]


@dataclass(frozen=True)
class SearchSettings:
    """How vector candidates are found: exactly (default) or through HNSW with `ef_search`."""

    approximate: bool = False
    ef_search: int = 100


def vector_array(value: Any) -> npt.NDArray[np.float32]:
    """A pgvector value (or array) as a float32 numpy array."""
    array = value.to_numpy() if hasattr(value, "to_numpy") else value
    return np.asarray(array, dtype=np.float32)


def _needs_more(keys: list[float], depth: int, fetched: int, asked: int, margin: float) -> bool:
    """Whether rows beyond the `asked` read (keys: lower is better) could still tie with the `depth`-th."""
    if fetched < asked or len(keys) <= depth:
        return False
    ordered = sorted(keys)
    return ordered[-1] <= ordered[depth - 1] + margin


class PgCandidates:
    """Candidate lists for one request inside one read transaction (see the module docstring).

    Args:
        conn: A connection inside a REPEATABLE READ transaction.
        names: The store's tables.
        condition: The compiled filter.
        query: The query's unit vector; None for a search that reads text alone (lexical without a
            threshold), which asks for no cosine.
        text: The query text, for BM25.
        info: Reads the store's info row in this transaction (statistics, k1, b); called once, and
            only by lexical search, so a plain vector search costs one query.
        settings: Exact or HNSW vector candidates.
    """

    def __init__(
        self,
        conn: Any,
        names: TableNames,
        condition: Condition,
        query: npt.NDArray[np.float32] | None,
        text: str,
        info: Callable[[], StoreInfo],
        settings: SearchSettings,
    ) -> None:
        self._conn = conn
        self._names = names
        self._condition = condition
        self._query_given = query
        self._text = text
        self._read_info = info
        self._info_row: StoreInfo | None = None
        self._settings = settings
        self._rows: dict[str, Row] = {}

    @property
    def _query(self) -> npt.NDArray[np.float32]:
        if self._query_given is None:
            raise InvalidRequestError("this search has no query vector: a lexical search without a threshold")
        return self._query_given

    # -- vector ---------------------------------------------------------------------------------------

    def _vector_query(self, threshold: float, limit: int) -> list[Row]:
        from psycopg import sql

        where = [self._condition.text]
        params: list[Any] = list(self._condition.params)
        if threshold > 0.0:
            where.append("(embedding <#> %s) <= %s")
            params += [self._query, -(threshold - TOLERANCE)]
        # `<=>` is what the HNSW index (vector_cosine_ops) serves; `<#>` is never served by it: exact.
        order = "embedding <=> %s" if self._settings.approximate else "embedding <#> %s, id"
        params += [self._query, limit]
        statement = sql.SQL(
            "SELECT id, text, metadata, embedding FROM {} WHERE {} ORDER BY {} LIMIT %s"
        ).format(self._names.documents, sql.SQL(" AND ".join(where)), sql.SQL(order))
        # Binary results: a vector then arrives as raw float32 bytes instead of text to parse.
        if self._settings.approximate:
            # HNSW's settings and the query travel in one round trip (a pipeline).
            with self._conn.pipeline():
                self._set_approximate()
                cursor = self._conn.execute(statement, params, binary=True)
        else:
            cursor = self._conn.execute(statement, params, binary=True)
        found = [Row(r[0], r[1], r[2], vector_array(r[3])) for r in cursor.fetchall()]
        self._rows.update((row.id, row) for row in found)
        return found

    def _set_approximate(self) -> None:
        self._conn.execute(
            "SELECT set_config('hnsw.ef_search', %s, true), "
            "set_config('hnsw.iterative_scan', 'strict_order', true)",
            (str(self._settings.ef_search),),
        )

    def _scored(self, threshold: float, depth: int) -> tuple[list[Row], list[float]]:
        """Rows read deep enough that no row past them ties with the `depth`-th, and their cosines."""
        asked = depth + _EXTRA
        while True:
            found = self._vector_query(threshold, asked)
            if not found:
                return [], []
            scores = exact_scores(np.stack([r.embedding for r in found]), np.arange(len(found)), self._query)
            keys = (-scores).tolist()
            if self._settings.approximate or not _needs_more(keys, depth, len(found), asked, 2 * TOLERANCE):
                return found, scores.tolist()
            asked *= 4

    def vector(self, depth: int, threshold: float) -> list[tuple[str, float]]:
        """The best `depth` (id, cosine) among filter matches whose cosine passes `threshold`."""
        if depth == 0:
            return []
        found, scores = self._scored(threshold, depth)
        hits = [
            (row.id, score)
            for row, score in zip(found, scores, strict=True)
            if threshold == 0.0 or score >= threshold
        ]
        hits.sort(key=lambda hit: (-hit[1], hit[0]))
        return hits[:depth]

    # -- lexical --------------------------------------------------------------------------------------

    def _weights(self) -> tuple[list[str], list[float], list[str]]:
        """Query terms held by some document, with qtf * idf * (k1 + 1) and the language marker of the
        documents each counts for: the query is analysed in each language the store holds, in the
        order of `stores.lexical.searching` (languages by code, terms by first appearance)."""
        from psycopg import sql

        if not self._info.documents:
            return [], [], []
        table = self._names.terms
        held = self._conn.execute(
            sql.SQL("SELECT term, df FROM {} WHERE starts_with(term, %s) AND df > 0").format(table),
            (MARKER_PREFIX,),
        ).fetchall()
        held_df = {term[len(MARKER_PREFIX) :]: int(df) for term, df in held}
        languages = sorted(held_df) or [DEFAULT_LANGUAGE]
        analysed = [(language, query_weights(self._text, language)) for language in languages]
        pairs = [(term, language) for language, counts in analysed for term in counts]
        if not pairs:
            return [], [], []
        if len(languages) == 1:  # every document: the kept document frequencies
            documents = {languages[0]: self._info.documents}
            statement = sql.SQL("SELECT term, df FROM {} WHERE term = ANY(%s) AND df > 0").format(table)
            found = dict(self._conn.execute(statement, ([t for t, _ in pairs],)).fetchall())
            df = {(term, language): found[term] for term, language in pairs if term in found}
        else:  # BM25 over each language's documents, as `stores.lexical.searching` scores them
            documents = held_df
            statement = sql.SQL(
                "SELECT u.t, u.m, (SELECT count(*) FROM {} l WHERE l.terms @> ARRAY[u.t, u.m]) "
                "FROM unnest(%s::text[], %s::text[]) AS u(t, m)"
            ).format(self._names.lexical)
            markers_of = [language_marker(language) for _, language in pairs]
            rows = self._conn.execute(statement, ([t for t, _ in pairs], markers_of)).fetchall()
            df = {(t, m[len(MARKER_PREFIX) :]): int(c) for t, m, c in rows if c}
        k1 = self._info.k1
        terms: list[str] = []
        weights: list[float] = []
        markers: list[str] = []
        for language, counts in analysed:
            n = documents[language]
            for term, count in counts.items():
                if (term, language) in df:
                    frequency = df[(term, language)]
                    terms.append(term)
                    idf = math.log(1.0 + (n - frequency + 0.5) / (frequency + 0.5))
                    weights.append(count * idf * (k1 + 1.0))
                    markers.append(language_marker(language))
        return terms, weights, markers

    def _lexical_query(
        self, terms: list[str], weights: list[float], markers: list[str], limit: int
    ) -> list[tuple[str, int, list[int], float]]:
        from psycopg import sql

        info = self._info
        average = (info.total_length / info.documents if info.documents else 0.0) or 1.0
        join = "" if self._condition.always else " JOIN {docs} d USING (id)"
        statement = sql.SQL(
            "SELECT l.id, l.length, s.tfs, s.score FROM {lexical} l" + join + ", LATERAL ("
            "SELECT array_agg(x.tf ORDER BY x.o) AS tfs, "
            "sum(CASE WHEN x.tf > 0 THEN x.w * x.tf / (x.tf + %s * (1.0 - %s + %s * l.length / %s)) "
            "ELSE 0 END)"
            " AS score FROM (SELECT CASE WHEN array_position(l.terms, u.m) IS NULL THEN 0 "
            "ELSE coalesce(l.tfs[array_position(l.terms, u.t)], 0) END::float8 AS tf, u.w, u.o "
            "FROM unnest(%s::text[], %s::float8[], %s::text[]) WITH ORDINALITY AS u(t, w, m, o)) x) s "
            "WHERE l.terms && %s::text[] AND {condition} ORDER BY s.score DESC, l.id LIMIT %s"
        ).format(
            lexical=self._names.lexical,
            docs=self._names.documents,
            condition=sql.SQL(self._condition.text),
        )
        params = [
            info.k1,
            info.b,
            info.b,
            average,
            terms,
            weights,
            markers,
            terms,
            *self._condition.params,
            limit,
        ]
        rows = self._conn.execute(statement, params).fetchall()
        return [(r[0], int(r[1]), [int(tf) for tf in r[2]], float(r[3])) for r in rows]

    def _bm25(self, length: int, tfs: list[int], weights: list[float]) -> float:
        """BM25 exactly as `LexicalIndex._scores` computes it (same operations, same order)."""
        info = self._info
        k1, b = info.k1, info.b
        average = (info.total_length / info.documents if info.documents else 0.0) or 1.0
        norm = k1 * (1.0 - b + b * float(length) / average)
        score = 0.0
        for tf, weight in zip(tfs, weights, strict=True):
            if tf > 0:
                score += weight * float(tf) / (float(tf) + norm)
        return score

    def lexical(self, depth: int) -> list[tuple[str, float]]:
        """The best `depth` (id, BM25) among filter matches holding at least one query term."""
        if depth == 0:
            return []
        terms, weights, markers = self._weights()
        if not terms:
            return []
        asked = depth + _EXTRA
        while True:
            found = self._lexical_query(terms, weights, markers, asked)
            keys = [-score for _, _, _, score in found]
            margin = _LEXICAL_EPSILON * max(1.0, abs(keys[depth - 1]) if len(keys) >= depth else 1.0)
            if not _needs_more(keys, depth, len(found), asked, margin):
                break
            asked *= 4
        hits = [(doc_id, self._bm25(length, tfs, weights)) for doc_id, length, tfs, _ in found]
        hits.sort(key=lambda hit: (-hit[1], hit[0]))
        return hits[:depth]

    @property
    def _info(self) -> StoreInfo:
        if self._info_row is None:
            self._info_row = self._read_info()
        return self._info_row

    # -- rows -----------------------------------------------------------------------------------------

    def rows(self, ids: Sequence[str]) -> list[Row]:
        """The stored rows of `ids` (read once per search and kept)."""
        from psycopg import sql

        missing = [doc_id for doc_id in dict.fromkeys(ids) if doc_id not in self._rows]
        if missing:
            statement = sql.SQL("SELECT id, text, metadata, embedding FROM {} WHERE id = ANY(%s)").format(
                self._names.documents
            )
            for r in self._conn.execute(statement, (missing,), binary=True).fetchall():
                self._rows[r[0]] = Row(r[0], r[1], r[2], vector_array(r[3]))
        return [self._rows[doc_id] for doc_id in ids]

    def cosines(self, ids: Sequence[str]) -> npt.NDArray[np.float64]:
        """Exact cosine of each id with the query."""
        rows = self.rows(ids)
        if not rows:
            return np.zeros(0, np.float64)
        return exact_scores(np.stack([r.embedding for r in rows]), np.arange(len(rows)), self._query)

    def vectors(self, ids: Sequence[str]) -> npt.NDArray[np.float32]:
        """The stored vector of each id."""
        return np.stack([row.embedding for row in self.rows(ids)]).astype(np.float32)
