"""`HashingEmbedding`: the offline default. No download, no corpus statistics, deterministic, fast.

Each text becomes a bag of analysed terms (see `rag.embeddings.tokenize`) hashed into a fixed number of
buckets. Measured on SciFact (see `benchmarks/embeddings.py`), each step below earns its place:

- sublinear term frequency (1 + ln tf), so one repeated word cannot dominate a passage;
- a stopword list, the stateless stand-in for idf: without it "the" and "of" decide the ranking; with it,
  frequent content words ("result", "show", "use") and numbers also count half;
- a light English stemmer, so "studies" finds "studied";
- signed hashing: a colliding pair of terms cancels as often as it adds, so collisions add noise
  around zero instead of a bias towards texts with many terms.

The hash is BLAKE2b of the term's UTF-8 bytes, never Python's `hash()` (salted per process), so every term
lands in the same bucket with the same sign in every process, on every platform and Python version.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from rag.embeddings.base import normalize_rows
from rag.embeddings.tokenize import COMMON_WORDS, STOPWORDS, count_words, stem, terms
from rag.errors import InvalidRequestError
from rag.observability.steps import traced_embedding

__all__ = ["CACHE_LIMIT", "HashingEmbedding"]

# A term key is 63 bits: bit 62 is the sign, bit 61 marks a half-weight term, the rest picks the bucket.
_HASH_MASK = (1 << 63) - 1
_SIGN_SHIFT = 62
_HALF_FLAG = 1 << 61
_BUCKET_MASK = _HALF_FLAG - 1
_COMMON_STEMS = frozenset(stem(word) for word in COMMON_WORDS)
CACHE_LIMIT = 500_000
"""Words whose term keys a model keeps; the next new word empties the cache (memory stays bounded).

Read at each new word, so a test can lower it to see the reset without half a million words."""


def _term_key(term: str) -> int:
    """A stable 63-bit key for `term`, never 0 (0 marks a dropped word)."""
    digest = hashlib.blake2b(term.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little") & _HASH_MASK or 1


class _KeyCache(dict[str, int]):
    """Maps a folded word to its term key (0 when dropped), computing each one once."""

    def __init__(self, *, use_stem: bool, use_stopwords: bool) -> None:
        super().__init__()
        self._stem = use_stem
        self._stopwords = use_stopwords

    def __missing__(self, word: str) -> int:
        if self._stopwords and word in STOPWORDS:
            key = 0
        else:
            term = stem(word) if self._stem else word
            key = _term_key(term)
            if self._stopwords and (term in _COMMON_STEMS or word in COMMON_WORDS or word.isdigit()):
                key |= _HALF_FLAG
            else:
                key &= ~_HALF_FLAG
        if len(self) >= CACHE_LIMIT:
            # A plain reset keeps memory bounded; the hit rate recovers within a few hundred texts.
            self.clear()
        self[word] = key
        return key


class HashingEmbedding:
    """Hashed, stemmed, sublinear term frequencies: texts sharing distinctive words get similar vectors.

    A lexical model: it matches words, not meanings. Use it offline, in tests, or as a fast baseline; use
    `SentenceTransformerEmbedding` for semantic search.

    Args:
        dimensions: vector length. More dimensions mean fewer hash collisions and better ranking, at
            4 bytes per dimension per chunk. Measured on SciFact (nDCG@10; BM25 scores 0.705 there):
            0.46 at 384, 0.53 at 1024, 0.56 at 2048, 0.57 at 4096 in vector search alone. The default is
            384 because the toolkit searches in hybrid mode by default, where BM25 carries the ranking and
            the hashed vector only refines it: hybrid scores 0.704 at 384 (0.682 at 384 and 0.680 at
            1024 with the earlier, weaker BM25; see docs/retrieval.md), while
            384 dimensions take 1.5 GB per million chunks instead of 4 GB, search 2.7x less memory, and
            write about 3x faster into Chroma (whose HNSW insert cost grows with the dimension).
            For vector-only search over hashed vectors, pick 1024 or more.
        stem: fold English word endings ("studies" ~ "studied").
        stopwords: drop English function words, and halve the weight of frequent content words and numbers.
        sublinear_tf: weight a term by 1 + ln(count) instead of its raw count.

    Example:
        >>> model = HashingEmbedding(dimensions=256)
        >>> vectors = model.embed(["Chroma keeps vectors", "vectors in Chroma", "a cat"])
        >>> vectors.shape, model.name
        ((3, 256), 'hashing-v2-d256-logtf-stem-stop')
        >>> bool(vectors[0] @ vectors[1] > vectors[0] @ vectors[2])
        True
    """

    def __init__(
        self,
        dimensions: int = 384,
        *,
        stem: bool = True,
        stopwords: bool = True,
        sublinear_tf: bool = True,
    ) -> None:
        if isinstance(dimensions, bool) or not isinstance(dimensions, int) or not 2 <= dimensions <= 1 << 24:
            raise InvalidRequestError(f"dimensions must be an integer in [2, 16777216], got {dimensions!r}")
        for label, flag in (
            ("stem", stem),
            ("stopwords", stopwords),
            ("sublinear_tf", sublinear_tf),
        ):
            if not isinstance(flag, bool):
                raise InvalidRequestError(f"{label} must be True or False, got {flag!r}")
        self._dimensions = dimensions
        self._stem = stem
        self._stopwords = stopwords
        self._sublinear = sublinear_tf
        self._keys = _KeyCache(use_stem=stem, use_stopwords=stopwords)

    @property
    def name(self) -> str:
        """Every setting that changes the vectors, e.g. ``hashing-v2-d384-logtf-stem-stop``."""
        parts = [
            f"hashing-v2-d{self._dimensions}",
            "logtf" if self._sublinear else "rawtf",
            "stem" if self._stem else "nostem",
            "stop" if self._stopwords else "nostop",
        ]
        return "-".join(parts)

    @property
    def dimensions(self) -> int:
        return self._dimensions

    @property
    def max_tokens(self) -> None:
        """No input limit: any text length hashes into the same vector size."""
        return None

    def count_tokens(self, text: str) -> int:
        """Words in `text` (each character of Chinese, Japanese, Thai... counts as one)."""
        return count_words(text)

    @traced_embedding
    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """An (n, dimensions) float32 array of unit rows; a text without words gets a zero row."""
        if isinstance(texts, str):
            raise InvalidRequestError(f"embed() takes a list of texts, not a single string: {texts[:40]!r}")
        keys: list[int] = []
        counts: list[int] = []
        sizes: list[int] = []
        for text in texts:
            if not isinstance(text, str):
                raise InvalidRequestError(f"embed() takes strings, got {type(text).__name__}: {text!r:.60}")
            bag = self._bag(text)
            keys.extend(bag)
            counts.extend(bag.values())
            sizes.append(len(bag))
        return normalize_rows(self._scatter(keys, counts, sizes), model=self.name)

    def _bag(self, text: str) -> Counter[int]:
        """Term key -> count for one text, in order of first occurrence (the order the vector sums in)."""
        # Counting every key, then dropping the stopwords' 0, keeps the whole loop in C; filtering in a
        # generator first costs a Python step per word.
        bag = Counter(map(self._keys.__getitem__, terms(text)))
        bag.pop(0, None)
        return bag

    def _scatter(self, keys: list[int], counts: list[int], sizes: list[int]) -> npt.NDArray[np.float32]:
        """Add each (text, key, count) into its signed bucket."""
        out = np.zeros((len(sizes), self._dimensions), dtype=np.float32)
        if not keys:
            return out
        key_array = np.array(keys, dtype=np.int64)
        weights = np.array(counts, dtype=np.float32)
        if self._sublinear:
            weights = (1.0 + np.log(weights)).astype(np.float32)
        weights[(key_array & _HALF_FLAG) != 0] *= 0.5
        weights[(key_array >> _SIGN_SHIFT) & 1 == 1] *= -1.0
        buckets = (key_array & _BUCKET_MASK) % self._dimensions
        rows = np.repeat(np.arange(len(sizes), dtype=np.int64), sizes)
        np.add.at(out, (rows, buckets), weights)
        return out

    def __repr__(self) -> str:
        return (
            f"HashingEmbedding(dimensions={self._dimensions}, stem={self._stem}, "
            f"stopwords={self._stopwords}, sublinear_tf={self._sublinear})"
        )
