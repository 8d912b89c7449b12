"""Text analysis for the lexical index: words to term ids, with a cache so each distinct word is stemmed once.

The words are `rag.embeddings.tokenize.terms`: Unicode case folding, accent stripping, overlapping
character bigrams for scripts written without spaces (CJK, Thai); then two words joined by one hyphen
or slash are added joined (`compounds`: "IL-10" also gives "il10"). English stopwords are dropped and
the rest reduced with Porter's stemmer (`rag.embeddings.porter`), which leaves words of other scripts
(Arabic, Cyrillic, Greek, Hindi) whole, so a document in any script matches on its own words or
character pairs. `TOKENIZER` names this analysis; an index saved under another name must be rebuilt
from its texts (every store does so when it opens one).

Example:
    >>> analyze("The Cafés were RUNNING")
    ['cafe', 'run']
    >>> vocabulary = Vocabulary()
    >>> ids, owners, lengths = vocabulary.encode_many(["running cafés", "a café runs"])
    >>> sorted(zip(owners.tolist(), ids.tolist())), lengths.tolist(), vocabulary.terms
    ([(0, 0), (0, 1), (1, 0), (1, 1)], [2, 2], ['run', 'cafe'])
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from rag.embeddings.porter import porter_stem
from rag.embeddings.tokenize import STOPWORDS, fold, terms

__all__ = ["TOKENIZER", "Vocabulary", "analyze", "words"]

# "rag-en-1": the light stemmer of `rag.embeddings.tokenize`, no compounds. "rag-en-2": Porter's stemmer
# and joined compounds, +0.02 nDCG@10 on BEIR SciFact (docs/retrieval.md). Stores rebuild an index saved
# under another name from their stored texts when they open it.
TOKENIZER = "rag-en-2"
_STOP = -1  # cached id of a word that is dropped (a stopword)
_UNKNOWN = -2  # a query word whose term no document holds
_MISSING = -3  # a word not seen yet
_ALNUM = np.zeros(256, dtype=np.bool_)
_ALNUM[np.frombuffer(b"abcdefghijklmnopqrstuvwxyz0123456789", dtype=np.uint8)] = True
_HASH_BASE = np.uint64(0x9E3779B97F4A7C15)  # odd, with well-mixed bits
_HYPHEN, _SLASH = ord("-"), ord("/")
_MAX_HASHED = 64  # longer words take the dictionary path
_CHUNK_BYTES = 1 << 23  # ASCII text split in numpy per ~8 MB, to bound temporary arrays


def _chunks(rows: list[int], texts: Sequence[str]) -> list[list[int]]:
    chunks: list[list[int]] = []
    size = _CHUNK_BYTES
    for row in rows:
        if size >= _CHUNK_BYTES:
            chunks.append([])
            size = 0
        chunks[-1].append(row)
        size += len(texts[row]) + 1
    return chunks


def _word_hashes(
    data: npt.NDArray[np.uint8], starts: npt.NDArray[np.intp], lengths: npt.NDArray[np.intp]
) -> npt.NDArray[np.uint64]:
    """A 64-bit polynomial hash of each word `data[start:start + length]`, seeded with its length.

    Words of up to 64 bytes hash without collision in practice (about 2^-50 for a pair): the index maps
    hashes to term ids, so a collision would merge two words, which is the price of skipping a Python
    dictionary lookup per word.
    """
    hashes = lengths.astype(np.uint64)
    active = np.arange(starts.size)
    for offset in range(int(lengths.max(initial=0))):
        active = active[lengths[active] > offset]
        hashes[active] = hashes[active] * _HASH_BASE + data[starts[active] + offset]
    return hashes


# Two ASCII words joined by one hyphen or slash, the second one looked ahead so that "a-b-c" gives both
# "a-b" and "b-c". On folded text; the look-behind and look-ahead keep each part a whole word.
_COMPOUND = re.compile(r"(?<![^\W_])([a-z0-9]+)[-/](?=([a-z0-9]+)(?![^\W_]))")


def compounds(text: str) -> list[str]:
    """Pairs of words one hyphen or slash apart, joined: "IL-10" gives "il10", "T-cell/B" "tcell", "cellb".

    Biomedical and technical names are spelt with and without the hyphen ("IL-10", "IL10"); indexing
    the joined form beside the parts lets either spelling find the other (+0.007 nDCG@10 on SciFact).
    Only ASCII letters and digits join (after folding, so "Café-Bar" gives "cafebar").
    """
    if "-" not in text and "/" not in text:
        return []
    folded = text.lower() if text.isascii() else fold(text)
    return [first + second for first, second in _COMPOUND.findall(folded)]


def words(text: str) -> list[str]:
    """The words the lexical index analyses: `rag.embeddings.tokenize.terms`, then the `compounds`."""
    found = terms(text)
    found.extend(compounds(text))
    return found


def _term_of(word: str) -> str | None:
    return None if word in STOPWORDS else porter_stem(word)


def analyze(text: str) -> list[str]:
    """The index terms of `text` as the lexical index sees them: words in order, then compounds."""
    return [term for term in map(_term_of, words(text)) if term is not None]


class Vocabulary:
    """Dense term ids, growing as documents bring new terms.

    Example:
        >>> vocabulary = Vocabulary(["run"])
        >>> vocabulary.encode_query("running runs fast")
        [0, 0]
    """

    def __init__(self, known: Sequence[str] = ()) -> None:
        self.terms: list[str] = list(known)
        self._ids: dict[str, int] = {term: index for index, term in enumerate(self.terms)}
        if len(self._ids) != len(self.terms):
            raise ValueError("vocabulary terms must be distinct")
        # Raw folded word -> term id or _STOP: stemming in Python is the slow step of indexing, and the
        # same words recur across documents.
        self._words: dict[str, int] = {}
        # The same for ASCII words by 64-bit hash (sorted keys, aligned ids): see `_word_hashes`.
        self._hash_keys = np.zeros(0, dtype=np.uint64)
        self._hash_ids = np.zeros(0, dtype=np.int32)

    def __len__(self) -> int:
        return len(self.terms)

    def _learn(self, word: str) -> int:
        term = _term_of(word)
        if term is None:
            index = _STOP
        else:
            index = self._ids.get(term, -1)
            if index < 0:
                index = len(self.terms)
                self.terms.append(term)
                self._ids[term] = index
        self._words[word] = index
        return index

    def _lookup(self, word: str) -> int:
        """The id of a query word; adds no term, and caches no unknown word (a later add may bring it)."""
        index = self._words.get(word)
        if index is not None:
            return index
        term = _term_of(word)
        if term is None:
            return _STOP
        index = self._ids.get(term)
        if index is None:
            return _UNKNOWN
        self._words[word] = index
        return index

    def encode_many(
        self, texts: Sequence[str]
    ) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """Term ids of all `texts` (in no particular order), the text each belongs to, and each text's length.

        Plain ASCII texts, the common case, are split and hashed word by word in numpy; others go
        through `rag.embeddings.tokenize.terms`. Both give the same terms (a test holds them equal).
        """
        ascii_rows = [row for row, text in enumerate(texts) if text.isascii()]
        other_rows = [row for row, text in enumerate(texts) if not text.isascii()]
        id_parts, owner_parts = [], []
        for chunk in _chunks(ascii_rows, texts):
            ids, owners = self._encode_ascii([texts[row] for row in chunk])
            id_parts.append(ids)
            owner_parts.append(np.asarray(chunk, dtype=np.int64)[owners])
        if other_rows:
            ids, owners = self._encode_words([words(texts[row]) for row in other_rows])
            id_parts.append(ids)
            owner_parts.append(np.asarray(other_rows, dtype=np.int64)[owners])
        ids = np.concatenate(id_parts) if id_parts else np.zeros(0, np.int32)
        owners = np.concatenate(owner_parts) if owner_parts else np.zeros(0, np.int64)
        kept = ids >= 0  # stopwords drop out, and out of the lengths
        ids, owners = ids[kept], owners[kept]
        return ids, owners, np.bincount(owners, minlength=len(texts)).astype(np.int64)

    def _encode_words(
        self, word_lists: Sequence[list[str]]
    ) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int64]]:
        words = [word for found in word_lists for word in found]
        cache = self._words
        for word in dict.fromkeys(words):
            if word not in cache:
                self._learn(word)
        ids = np.array([cache[word] for word in words], dtype=np.int32)
        sizes = np.fromiter(map(len, word_lists), dtype=np.int64, count=len(word_lists))
        return ids, np.repeat(np.arange(len(word_lists), dtype=np.int64), sizes)

    def _encode_ascii(self, texts: list[str]) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int64]]:
        # For ASCII, casefold is lower() and the words of `terms` are the runs of [a-z0-9].
        joined = "\n".join(texts).lower()
        data = np.frombuffer(joined.encode("ascii"), dtype=np.uint8)
        edges = np.diff(_ALNUM[data].view(np.int8), prepend=np.int8(0), append=np.int8(0))
        starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
        text_ends = np.cumsum(np.fromiter((len(text) + 1 for text in texts), np.int64, len(texts)))
        owners = np.searchsorted(text_ends, starts, side="right").astype(np.int64)
        lengths = ends - starts
        ids = np.empty(starts.size, dtype=np.int32)
        short = lengths <= _MAX_HASHED
        ids[short] = self._ids_of_hashed(joined, data, starts[short], lengths[short])
        for position in np.flatnonzero(~short).tolist():  # rare: very long tokens (URLs, blobs)
            word = joined[starts[position] : ends[position]]
            ids[position] = self._words[word] if word in self._words else self._learn(word)
        return self._with_compounds(joined, data, starts, ends, ids, owners)

    def _with_compounds(
        self,
        joined: str,
        data: npt.NDArray[np.uint8],
        starts: npt.NDArray[np.intp],
        ends: npt.NDArray[np.intp],
        ids: npt.NDArray[np.int32],
        owners: npt.NDArray[np.int64],
    ) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int64]]:
        """Add the term of each pair of words one hyphen or slash apart (see `compounds`)."""
        if ends.size < 2:
            return ids, owners
        gap = ends[:-1]
        pairs = np.flatnonzero((starts[1:] == gap + 1) & ((data[gap] == _HYPHEN) | (data[gap] == _SLASH)))
        if not pairs.size:
            return ids, owners
        # Few words are hyphenated, so a Python step per compound costs little.
        cache = self._words
        names = [
            joined[a:b] + joined[c:d]
            for a, b, c, d in zip(
                starts[pairs].tolist(),
                ends[pairs].tolist(),
                starts[pairs + 1].tolist(),
                ends[pairs + 1].tolist(),
                strict=True,
            )
        ]
        extra = np.array([cache[w] if w in cache else self._learn(w) for w in names], dtype=np.int32)
        return np.concatenate([ids, extra]), np.concatenate([owners, owners[pairs]])

    def _ids_of_hashed(
        self,
        joined: str,
        data: npt.NDArray[np.uint8],
        starts: npt.NDArray[np.intp],
        lengths: npt.NDArray[np.intp],
    ) -> npt.NDArray[np.int32]:
        hashes = _word_hashes(data, starts, lengths)
        distinct, first, inverse = np.unique(hashes, return_index=True, return_inverse=True)
        keys, values = self._hash_keys, self._hash_ids
        at = np.minimum(np.searchsorted(keys, distinct), max(keys.size - 1, 0))
        known = keys[at] == distinct if keys.size else np.zeros(distinct.size, np.bool_)
        ids = np.where(known, values[at] if keys.size else 0, _MISSING).astype(np.int32)
        new = np.flatnonzero(~known)
        if new.size:
            # Offsets as Python ints in one go: indexing numpy arrays one element at a time costs more
            # than the dictionary work per new word.
            begins = starts[first[new]]
            ends = begins + lengths[first[new]]
            words = [joined[b:e] for b, e in zip(begins.tolist(), ends.tolist(), strict=True)]
            cache = self._words
            ids[new] = [cache[word] if word in cache else self._learn(word) for word in words]
            keys = np.concatenate([keys, distinct[new]])
            order = np.argsort(keys, kind="stable")
            self._hash_keys, self._hash_ids = keys[order], np.concatenate([values, ids[new]])[order]
        return ids[inverse.reshape(-1)]

    def encode_query(self, text: str) -> list[int]:
        """Term ids of a query in order, repeats kept; stopwords and terms no document holds dropped."""
        return [index for index in map(self._lookup, words(text)) if index >= 0]
