"""Text analysis for the lexical index: words to term ids, with a cache so each distinct word is stemmed once.

The `words` of a text go through the `Analyser` of its language (`stores.lexical.languages`).
`TOKENIZER` names this analysis; an index saved under another name is rebuilt from its texts when a
store opens it (docs/retrieval.md).

Example:
    >>> analyze("The Cafés were RUNNING")
    ['cafe', 'run']
    >>> analyze("Die Häuser am See", "de")
    ['haus', 'see']
    >>> vocabulary = Vocabulary()
    >>> ids, owners, lengths = vocabulary.encode_many(["running cafés", "a café runs"])
    >>> sorted(zip(owners.tolist(), ids.tolist())), lengths.tolist(), vocabulary.terms
    ([(0, 0), (0, 1), (1, 0), (1, 1)], [2, 2], ['run', 'cafe'])
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from rag.embeddings.tokenize import fold, split_words
from stores.lexical.idmap import PackedIds
from stores.lexical.languages import DEFAULT_LANGUAGE, Analyser, analyser_for, question_stopwords

__all__ = ["TOKENIZER", "Vocabulary", "analyze", "query_idfs", "query_terms", "words"]

TOKENIZER = "rag-5"
_Term = TypeVar("_Term", str, int)  # a term, or its id
_STOP = -1  # cached id of a word that is dropped (a stopword)
_ALNUM = np.zeros(256, dtype=np.bool_)
_ALNUM[np.frombuffer(b"abcdefghijklmnopqrstuvwxyz0123456789", dtype=np.uint8)] = True
_HASH_BASE = np.uint64(0x9E3779B97F4A7C15)  # odd, with well-mixed bits
_HYPHEN, _SLASH, _PLUS, _HASH = ord("-"), ord("/"), ord("+"), ord("#")
_MAX_HASHED = 64  # longer words take the dictionary path
_CHUNK_BYTES = 1 << 23  # text analysed per ~8 MB, to bound temporary arrays and word lists
IntArray = npt.NDArray[np.int64]
Positions = npt.NDArray[np.intp]
Bytes = npt.NDArray[np.uint8]


def _chunks(rows: IntArray, sizes: IntArray) -> list[IntArray]:
    """`rows` cut into runs of about `_CHUNK_BYTES` of text (`sizes`: each text's length plus one), as
    numpy arrays: a Python int per row would scatter over the allocator's arenas (`stores.numpy.records`)."""
    if not rows.size:
        return []
    before = np.cumsum(sizes[rows]) - sizes[rows]  # text ahead of each row in `rows`
    return np.split(rows, np.flatnonzero(np.diff(before // _CHUNK_BYTES)) + 1)


def _texts_of(texts: Sequence[str], rows: IntArray) -> list[str]:
    """`texts[row]` for each of `rows`: a slice when they are consecutive (no Python int per row)."""
    first, last = int(rows[0]), int(rows[-1])
    if last - first + 1 == rows.size:
        return list(texts[first : last + 1])
    return [texts[row] for row in rows.tolist()]


def _word_hashes(data: Bytes, starts: Positions, lengths: Positions) -> npt.NDArray[np.uint64]:
    """A 64-bit polynomial hash of each word `data[start:start + length]`, seeded with its length: a
    collision (about 2^-50 for a pair of words up to 64 bytes) would merge two words in the index."""
    hashes = lengths.astype(np.uint64)
    active = np.arange(starts.size)
    for offset in range(int(lengths.max(initial=0))):
        active = active[lengths[active] > offset]
        hashes[active] = hashes[active] * _HASH_BASE + data[starts[active] + offset]
    return hashes


# Two ASCII words joined by one hyphen or slash, the second one looked ahead so that "a-b-c" gives both
# "a-b" and "b-c". On folded text; the look-behind and look-ahead keep each part a whole word.
_COMPOUND = re.compile(r"(?<![^\W_])([a-z0-9]+)[-/](?=([a-z0-9]+)(?![^\W_]))")
# A word followed by "++" ("C++", "g++"), or one letter followed by "#" ("C#", "F#"), on folded text.
_SYMBOLIC = re.compile(r"(?<![^\W_])(?:([a-z0-9]+)\+\+|([a-z])#)")
# A word joining words by case ("DropSitePassword", "getElementById", "XMLHttpRequest": two lower-case
# letters, then a capitalised word), and its parts: a capital run before a capitalised word, a
# capitalised or lower-case word, digits. On the text as written.
_CASE_JOIN = re.compile(r"[a-z]{2}[A-Z][a-z]")
_CASE_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_ASCII_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")


def _mixed_case_words(text: str, joins: Iterable[int]) -> list[tuple[int, str]]:
    """(start, word) of each whole word of ASCII letters and digits in `text` that joins words by case,
    widened from its `joins` (`_CASE_JOIN` positions, in order): a pattern for whole words would be slow."""
    found: list[tuple[int, str]] = []
    end = 0
    for at in joins:
        if at < end:
            continue  # a second join inside the word just taken
        start, end = at, at + 4
        while start and text[start - 1] in _ASCII_ALNUM:
            start -= 1
        while end < len(text) and text[end] in _ASCII_ALNUM:
            end += 1
        if (start and text[start - 1].isalnum()) or (end < len(text) and text[end].isalnum()):
            continue  # part of a longer word with other letters ("éHttpClient")
        found.append((start, text[start:end]))
    return found


def words(text: str) -> list[str]:
    """The words the lexical index analyses, with the spellings that name one thing several ways.

    First `split_words` (case-folded, accents kept for the stemmers); then, of ASCII letters and digits
    only: two words one hyphen or slash apart, joined ("IL-10" gives "il10", so either spelling finds
    the other); a word written with "++" or "#" spelt out ("C++" gives "cpp", "C#" "csharp", where the
    symbols alone would leave "c"); the parts of a word joined by case ("XMLHttpRequest" gives "xml",
    "http", "request", as prose names an identifier).

    Example:
        >>> words("IL-10 in C++ HttpClient")
        ['il', '10', 'in', 'c', 'httpclient', 'il10', 'cpp', 'http', 'client']
    """
    found = split_words(text)
    if "-" in text or "/" in text:
        found += [first + second for first, second in _COMPOUND.findall(fold(text))]
    if "+" in text or "#" in text:
        found += [plus + "pp" if plus else letter + "sharp" for plus, letter in _SYMBOLIC.findall(fold(text))]
    joins = (join.start() for join in _CASE_JOIN.finditer(text))
    found += [part.lower() for _, word in _mixed_case_words(text, joins) for part in _CASE_PART.findall(word)]
    return found


def analyze(text: str, language: str = DEFAULT_LANGUAGE) -> list[str]:
    """The index terms of `text` in `language` (a `lang` value), in the order of `words`."""
    return [term for term in analyser_for(language).terms(words(text)) if term is not None]


def query_terms(text: str, language: str = DEFAULT_LANGUAGE) -> list[str | None]:
    """The term of each word of a query analysed in `language` (None for a stop word), less the
    function words of the query's own language when it shows one (`languages.question_stopwords`).

    Example:
        >>> query_terms("Die Häuser, das Haus", "de"), query_terms("the houses", "en")
        (['haus', 'haus'], [None, 'hous'])
        >>> query_terms("la liste des fichiers", "en")
        ['list', 'fichier']
    """
    found = words(text)
    foreign = question_stopwords(found)
    return analyser_for(language).terms([word for word in found if fold(word) not in foreign])


def query_idfs(
    analysed: Sequence[tuple[str, Sequence[_Term | None]]],
    frequencies: Mapping[tuple[str, _Term], int],
    documents: Mapping[str, int],
) -> list[tuple[str, _Term, float]]:
    """(language, term, weight) of each query term some document of its language holds, in the order of
    `analysed` (each language's `query_terms` or their ids) and of first use; the weight sums the idf of
    the query words the term stands for (BM25's qtf * idf).

    A query word's idf counts the documents of every language that hold it as their analysis spells it
    (`frequencies[language, term]`, among `documents[language]` documents), and every document of a
    language that drops it as a stop word: one idf per word over the whole collection, so the scores of
    documents in different languages compare. Counted per language, the few documents of a small
    language (pages left untranslated) would find a word of the query's language rare and outscore the
    documents written in it.

    Example:
        >>> query_idfs([("de", ["haus"]), ("en", ["hauser"])], {("de", "haus"): 1, ("en", "hauser"): 1},
        ...     {"de": 1, "en": 1})  # doctest: +ELLIPSIS
        [('de', 'haus', 0.182...), ('en', 'hauser', 0.182...)]
    """
    total = sum(documents.values())
    held = [0] * max((len(terms) for _, terms in analysed), default=0)
    for language, terms in analysed:
        for at, term in enumerate(terms):
            held[at] += documents[language] if term is None else frequencies.get((language, term), 0)
    idfs = [math.log(1.0 + (total - count + 0.5) / (count + 0.5)) for count in held]
    weighted: list[tuple[str, _Term, float]] = []
    for language, terms in analysed:
        sums: dict[_Term, float] = {}
        for term, idf in zip(terms, idfs, strict=True):
            if term is not None and frequencies.get((language, term), 0):
                sums[term] = sums.get(term, 0.0) + idf
        weighted += [(language, term, weight) for term, weight in sums.items()]
    return weighted


@dataclass
class _WordCache:
    """Word hash -> term id or _STOP for one analyser; words over _MAX_HASHED bytes, rare, in a dict."""

    keys: npt.NDArray[np.uint64] = field(default_factory=lambda: np.zeros(0, dtype=np.uint64))
    ids: npt.NDArray[np.int32] = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    long_words: dict[str, int] = field(default_factory=dict)


class Vocabulary:
    """Dense term ids, growing as documents bring new terms.

    Memory: no Python object per term or word. Terms are packed UTF-8 (`stores.lexical.idmap.PackedIds`,
    a term's id is its row); each word seen maps to its term id (or to "stopword") through sorted arrays
    of 64-bit word hashes, 12 bytes a word, one map per language seen. Stemming in Python is the slow
    step of indexing and the same words recur across documents, so each word is stemmed once.

    Example:
        >>> vocabulary = Vocabulary()
        >>> vocabulary.ids_of(["fast", "run"], add=True).tolist(), vocabulary.encode_query("the running runs")
        ([0, 1], [None, 1, 1])
    """

    def __init__(self, terms: PackedIds | None = None) -> None:
        self.packed = PackedIds() if terms is None else terms
        self._caches: dict[str, _WordCache] = {}

    def __len__(self) -> int:
        return self.packed.row_count

    @property
    def terms(self) -> list[str]:
        """Every term, by id (a fresh list)."""
        return self.packed.ids_at(range(self.packed.row_count))

    def term(self, index: int) -> str:
        """The term of id `index`."""
        return self.packed.id_at(index)

    def ids_of(self, terms: Sequence[str], add: bool = False) -> npt.NDArray[np.int64]:
        """The id of each of `terms` (-1 for one not held, unless `add` adds it)."""
        found = self.packed.rows_of(list(terms))
        if add and (found < 0).any():
            fresh = [term for term, at in zip(terms, found.tolist(), strict=True) if at < 0]
            self.packed.append(list(dict.fromkeys(fresh)))
            found = self.packed.rows_of(list(terms))
        return found

    def _learn(self, analyser: Analyser, new_words: list[str]) -> npt.NDArray[np.int32]:
        """Term ids (or _STOP) of words not cached yet, adding the terms they bring in order of first use."""
        stems = analyser.terms(new_words)
        wanted = list(dict.fromkeys(stem for stem in stems if stem is not None))
        found = dict(zip(wanted, self.ids_of(wanted, add=True).tolist(), strict=True))
        return np.array([_STOP if stem is None else found[stem] for stem in stems], dtype=np.int32)

    def _ids(
        self,
        analyser: Analyser,
        data: Bytes,
        starts: Positions,
        lengths: Positions,
        spell: Callable[[Positions], list[str]],
        by_first_use: bool,
    ) -> npt.NDArray[np.int32]:
        """Term ids (or _STOP) of the words `data[start:start + length]`; `spell(positions)` gives the
        words at those positions as `str`, for the new ones. New terms are numbered in hash order, or
        in order of first use."""
        cache = self._caches.setdefault(analyser.name, _WordCache())
        short = np.flatnonzero(lengths <= _MAX_HASHED)
        hashes = _word_hashes(data, starts[short], lengths[short])
        distinct, first, inverse = np.unique(hashes, return_index=True, return_inverse=True)
        keys, values = cache.keys, cache.ids
        at = np.searchsorted(keys, distinct)
        if keys.size:
            clipped = np.minimum(at, keys.size - 1)
            known, found = keys[clipped] == distinct, values[clipped]
        else:
            known, found = np.zeros(distinct.size, np.bool_), np.zeros(distinct.size, np.int32)
        new = np.flatnonzero(~known)
        if new.size:
            learned = new[np.argsort(first[new], kind="stable")] if by_first_use else new
            found[learned] = self._learn(analyser, spell(short[first[learned]]))
            # `distinct` is sorted, so inserting its new hashes at their search positions keeps order.
            cache.keys = np.insert(keys, at[new], distinct[new])
            cache.ids = np.insert(values, at[new], found[new])
        ids = np.empty(starts.size, np.int32)
        ids[short] = found[inverse.reshape(-1)]
        long = np.flatnonzero(lengths > _MAX_HASHED)  # rare: very long tokens (URLs, blobs)
        for position, word in zip(long.tolist(), spell(long), strict=True):
            if word not in cache.long_words:
                cache.long_words[word] = int(self._learn(analyser, [word])[0])
            ids[position] = cache.long_words[word]
        return ids

    def _ids_of_words(self, analyser: Analyser, found: Sequence[str]) -> npt.NDArray[np.int32]:
        """Term ids (or _STOP) of words given as `str`, hashed over their UTF-8 bytes like ASCII words."""
        position: dict[str, int] = {}
        index = np.fromiter((position.setdefault(w, len(position)) for w in found), np.int64, len(found))
        distinct = list(position)
        encoded = [word.encode("utf-8", "surrogatepass") for word in distinct]
        lengths = np.fromiter(map(len, encoded), np.intp, len(encoded))
        data = np.frombuffer(b"".join(encoded), np.uint8)
        starts = np.cumsum(lengths) - lengths
        ids = self._ids(analyser, data, starts, lengths, lambda at: [distinct[i] for i in at.tolist()], True)
        return ids[index]

    def encode_many(
        self, texts: Sequence[str], languages: Sequence[str] | None = None
    ) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """Term ids of all `texts` (in no particular order), the text each belongs to, and each text's length.

        `languages` gives each text's `lang` (default: English for all). Plain ASCII texts, the common
        case, are split and hashed word by word in numpy; others go through `words`. Both give the same
        terms (a test holds them equal).
        """
        if languages is not None and len(languages) != len(texts):
            raise ValueError(f"got {len(texts)} texts but {len(languages)} languages")
        by_language: dict[Analyser, list[int]] = {}
        for row, code in enumerate([DEFAULT_LANGUAGE] * len(texts) if languages is None else languages):
            by_language.setdefault(analyser_for(code), []).append(row)
        plain = np.fromiter(map(str.isascii, texts), np.bool_, len(texts))
        sizes = np.fromiter(map(len, texts), np.int64, len(texts)) + 1
        id_parts, owner_parts = [np.zeros(0, np.int32)], [np.zeros(0, np.int64)]
        for analyser, members in by_language.items():
            rows = np.array(members, np.int64)
            for chunk in _chunks(rows[plain[rows]], sizes):
                ids, owners = self._encode_ascii(analyser, _texts_of(texts, chunk))
                id_parts.append(ids)
                owner_parts.append(chunk[owners])
            for chunk in _chunks(rows[~plain[rows]], sizes):
                word_lists = [words(text) for text in _texts_of(texts, chunk)]
                id_parts.append(
                    self._ids_of_words(analyser, [word for found in word_lists for word in found])
                )
                owner_parts.append(np.repeat(chunk, [len(found) for found in word_lists]))
        ids, owners = np.concatenate(id_parts), np.concatenate(owner_parts)
        kept = ids >= 0  # stopwords drop out, and out of the lengths
        ids, owners = ids[kept], owners[kept]
        return ids, owners, np.bincount(owners, minlength=len(texts)).astype(np.int64)

    def _encode_ascii(
        self, analyser: Analyser, texts: list[str]
    ) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int64]]:
        # For ASCII, casefold is lower() and the words of `split_words` are the runs of [a-z0-9].
        written = "\n".join(texts)
        joined = written.lower()
        data = np.frombuffer(joined.encode("ascii"), dtype=np.uint8)
        edges = np.diff(_ALNUM[data].view(np.int8), prepend=np.int8(0), append=np.int8(0))
        starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
        text_ends = np.cumsum(np.fromiter((len(text) + 1 for text in texts), np.int64, len(texts)))
        owners = np.searchsorted(text_ends, starts, side="right").astype(np.int64)
        lengths = ends - starts
        ids = self._ids(
            analyser, data, starts, lengths, lambda at: _spelt(data, starts[at], lengths[at]), False
        )
        names, at = _ascii_extras(written, joined, data, starts, ends)
        extra_owners = np.searchsorted(text_ends, at, side="right").astype(np.int64)
        ids = np.concatenate([ids, self._ids_of_words(analyser, names)])
        return ids, np.concatenate([owners, extra_owners])

    def encode_query(self, text: str, language: str = DEFAULT_LANGUAGE) -> list[int | None]:
        """The term id of each word of `query_terms(text, language)`: None for a stop word, -1 for a
        term no document holds."""
        terms = query_terms(text, language)
        ids = iter(self.ids_of([term for term in terms if term is not None]).tolist())
        return [None if term is None else next(ids) for term in terms]


def _spelt(data: Bytes, starts: Positions, lengths: Positions) -> list[str]:
    """The ASCII words `data[start:start + length]`, gathered with a newline after each and split once:
    no Python int per word (see `_chunks`), and one numpy pass where slicing took one step a word."""
    if not starts.size:
        return []
    sizes = lengths + 1
    offsets = np.cumsum(sizes) - sizes
    at = np.repeat(starts - offsets, sizes) + np.arange(int(offsets[-1] + sizes[-1]))
    gathered = data[np.minimum(at, data.size - 1)]  # a word may end the data: its newline lies past it
    gathered[offsets + lengths] = ord("\n")  # words are runs of [a-z0-9]: never a newline
    return gathered.tobytes().decode("ascii").split("\n")[:-1]


def _ascii_extras(
    written: str, joined: str, data: Bytes, starts: Positions, ends: Positions
) -> tuple[list[str], Positions]:
    """The words `words` adds to `split_words` in the ASCII texts `written` (`joined` and its bytes
    `data` folded, its words bounded by `starts` and `ends`), and where each one starts. Few words are
    hyphenated, carry symbols or join words by case, so a Python step per such word costs little."""
    gap = ends[:-1]
    pairs = np.flatnonzero((starts[1:] == gap + 1) & ((data[gap] == _HYPHEN) | (data[gap] == _SLASH)))
    after = np.append(data, [0, 0])  # two bytes of padding: every word end can look two ahead
    plus = (after[ends] == _PLUS) & (after[ends + 1] == _PLUS)
    sharp = (after[ends] == _HASH) & (ends - starts == 1) & (data[starts] >= ord("a"))
    marked = np.flatnonzero(plus | sharp)
    a, b, c, d = (at.tolist() for at in (starts[pairs], ends[pairs], starts[pairs + 1], ends[pairs + 1]))
    names = [joined[w:x] + joined[y:z] for w, x, y, z in zip(a, b, c, d, strict=True)]
    a, b, symbol = starts[marked].tolist(), ends[marked].tolist(), plus[marked].tolist()
    names += [
        joined[w:x] + ("pp" if is_plus else "sharp") for w, x, is_plus in zip(a, b, symbol, strict=True)
    ]
    raw = np.frombuffer(written.encode("ascii"), dtype=np.uint8)
    lower, upper = (raw >= ord("a")) & (raw <= ord("z")), (raw >= ord("A")) & (raw <= ord("Z"))
    joins = np.flatnonzero(lower[:-3] & lower[1:-2] & upper[2:-1] & lower[3:])  # `_CASE_JOIN`
    at = [starts[pairs], starts[marked]]
    for start, word in _mixed_case_words(written, joins.tolist()):
        parts = _CASE_PART.findall(word)
        names.extend(part.lower() for part in parts)
        at.append(np.full(len(parts), start, np.intp))
    return names, np.concatenate(at)
