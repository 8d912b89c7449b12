"""Text analysis for the lexical index: words to term ids, with a cache so each distinct word is stemmed once.

The words are `rag.embeddings.tokenize.split_words`: Unicode case folding, overlapping character bigrams
for scripts written without spaces (CJK, Thai); then two words joined by one hyphen or slash are added
joined (`compounds`: "IL-10" also gives "il10"), and words written with symbols are added spelt out
(`symbol_words`: "C++" also gives "cpp", "C#" "csharp"), and words joined by case give their parts
(`identifier_parts`: "HttpClient" also gives "http", "client"). Each word then goes through the
`Analyser` of its text's language (`stores.lexical.languages`: Snowball stemmer and stop words, accents
stripped after stemming), so a document in any language matches on its own words' stems. `TOKENIZER`
names this analysis; an index saved under another name must be rebuilt from its texts (every store
does so when it opens one).

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

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from rag.embeddings.tokenize import fold, split_words
from stores.lexical.idmap import PackedIds
from stores.lexical.languages import DEFAULT_LANGUAGE, Analyser, analyser_for, question_stopwords

__all__ = [
    "TOKENIZER",
    "Vocabulary",
    "analyze",
    "compounds",
    "identifier_parts",
    "query_weights",
    "symbol_words",
    "words",
]

# "rag-en-1": the light stemmer of `rag.embeddings.tokenize`, no compounds. "rag-en-2": Porter's stemmer
# and joined compounds, +0.02 nDCG@10 on BEIR SciFact (docs/retrieval.md). "rag-en-3": "C++" and "C#"
# spelt out. "rag-4": Snowball stemmers and stop words by each text's language, titles, headings and
# file path as a weighted field (`stores.lexical.fields`), a marker term per document naming its
# language. "rag-5": the parts of words written in mixed case. Stores rebuild an index saved under
# another name from their stored texts when they open it.
TOKENIZER = "rag-5"
_STOP = -1  # cached id of a word that is dropped (a stopword)
_MISSING = -3  # a word not seen yet
_ALNUM = np.zeros(256, dtype=np.bool_)
_ALNUM[np.frombuffer(b"abcdefghijklmnopqrstuvwxyz0123456789", dtype=np.uint8)] = True
_HASH_BASE = np.uint64(0x9E3779B97F4A7C15)  # odd, with well-mixed bits
_HYPHEN, _SLASH, _PLUS, _HASH = ord("-"), ord("/"), ord("+"), ord("#")
_MAX_HASHED = 64  # longer words take the dictionary path
_CHUNK_BYTES = 1 << 23  # text analysed per ~8 MB, to bound temporary arrays and word lists
IntArray = npt.NDArray[np.int64]


def _chunks(rows: IntArray, sizes: IntArray) -> list[IntArray]:
    """`rows` cut into runs of about `_CHUNK_BYTES` of text (`sizes`: each text's length plus one).

    Rows stay numpy arrays: a Python int per row would be a small object made during a bulk add,
    and such objects scatter over the allocator's arenas (see `stores.numpy.records`).
    """
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


# A word followed by "++" ("C++", "g++"), or one letter followed by "#" ("C#", "F#"), on folded text.
_SYMBOLIC = re.compile(r"(?<![^\W_])(?:([a-z0-9]+)\+\+|([a-z])#)")


def symbol_words(text: str) -> list[str]:
    """Words written with "++" or "#", spelt out: "C++" gives "cpp", "g++" "gpp", "C#" "csharp".

    The symbols are not word characters, so "C++" alone would be the word "c", which every page on C,
    Objective-C or C++ holds; the spelt-out word lets a question on C++ find the pages that name it.
    Only ASCII letters and digits count, as for `compounds`.
    """
    if "+" not in text and "#" not in text:
        return []
    folded = text.lower() if text.isascii() else fold(text)
    return [plus + "pp" if plus else letter + "sharp" for plus, letter in _SYMBOLIC.findall(folded)]


# A word joining words by case ("DropSitePassword", "getElementById", "XMLHttpRequest": two lower-case
# letters, then a capitalised word), and its parts: a capital run before a capitalised word, a
# capitalised or lower-case word, digits. On the text as written.
_CASE_JOIN = re.compile(r"[a-z]{2}[A-Z][a-z]")
_CASE_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_ASCII_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")


def _mixed_case_words(text: str, joins: Iterable[int] | None = None) -> list[tuple[int, str]]:
    """(start, word) of each whole word of ASCII letters and digits in `text` that joins words by case.

    The joins (`_CASE_JOIN`, or their positions given in order) are found first, then widened to their
    word: a pattern that had to find where words start would try every position of the text.
    """
    found: list[tuple[int, str]] = []
    end = 0
    for at in (join.start() for join in _CASE_JOIN.finditer(text)) if joins is None else joins:
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


def identifier_parts(text: str) -> list[str]:
    """The parts of words written in mixed case, folded: "DropSitePassword" gives "drop", "site",
    "password"; "XMLHttpRequest" "xml", "http", "request".

    Docs name their subjects with identifiers (a setting `DropSitePassword`, a class `HttpClient`) that
    the prose spells as words; indexing the parts beside the whole word lets either find the other.
    Underscores, dots and slashes already part words. Only ASCII letters and digits count.
    """
    return [part.lower() for _, word in _mixed_case_words(text) for part in _CASE_PART.findall(word)]


def words(text: str) -> list[str]:
    """The words the lexical index analyses: `rag.embeddings.tokenize.split_words` (case-folded, accents
    kept for the stemmers), the `compounds`, the `symbol_words`, then the `identifier_parts`."""
    found = split_words(text)
    found.extend(compounds(text))
    found.extend(symbol_words(text))
    found.extend(identifier_parts(text))
    return found


def analyze(text: str, language: str = DEFAULT_LANGUAGE) -> list[str]:
    """The index terms of `text` in `language` (a `lang` value) as the lexical index sees them: words in
    order, then compounds."""
    analyser = analyser_for(language)
    return [term for term in analyser.terms(words(text)) if term is not None]


def query_weights(text: str, language: str = DEFAULT_LANGUAGE) -> dict[str, float]:
    """The terms of a query analysed in `language`, with their frequency in it (BM25's qtf), less the
    function words of the query's own language when it shows one (`languages.question_stopwords`).

    An index holding several languages scores each document with the query analysed in the document's
    own language (`stores.lexical.index`), so the query terms match the way its terms were made.

    Example:
        >>> query_weights("Die Häuser, das Haus", "de"), query_weights("the houses", "en")
        ({'haus': 2.0}, {'hous': 1.0})
        >>> query_weights("la liste des fichiers", "en")
        {'list': 1.0, 'fichier': 1.0}
    """
    found = words(text)
    foreign = question_stopwords(found)
    weights: dict[str, float] = {}
    for term in analyser_for(language).terms([word for word in found if fold(word) not in foreign]):
        if term is not None:
            weights[term] = weights.get(term, 0.0) + 1.0
    return weights


@dataclass
class _WordCache:
    """Word hash -> term id or _STOP for one analyser (sorted keys, aligned ids); words over
    _MAX_HASHED bytes, rare, sit in a dict."""

    keys: npt.NDArray[np.uint64] = field(default_factory=lambda: np.zeros(0, dtype=np.uint64))
    ids: npt.NDArray[np.int32] = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    long_words: dict[str, int] = field(default_factory=dict)


class Vocabulary:
    """Dense term ids, growing as documents bring new terms.

    Memory: no Python object per term or word. Terms are packed UTF-8 with a sorted hash map
    (`stores.lexical.idmap.PackedIds`, a term's id is its row); each word seen maps to its term id (or to
    "stopword") through sorted arrays of 64-bit word hashes (`_word_hashes` of its UTF-8 bytes), 12 bytes
    a word, one map per language seen. Only words over 64 bytes, rare, sit in a dict. About 40 bytes a
    term in all, where a dict and a list of `str` took ~230.

    Example:
        >>> vocabulary = Vocabulary(["run"])
        >>> vocabulary.encode_query("running runs fast")
        {0: 2.0}
    """

    def __init__(self, known: Sequence[str] = ()) -> None:
        self._terms = PackedIds()
        if known:
            terms = list(known)
            if len(set(terms)) != len(terms):
                raise ValueError("vocabulary terms must be distinct")
            self._terms.append(terms)
        # Stemming in Python is the slow step of indexing, and the same words recur across documents.
        self._caches: dict[str, _WordCache] = {}

    def __len__(self) -> int:
        return self._terms.row_count

    @property
    def terms(self) -> list[str]:
        """Every term, by id (a fresh list)."""
        return self._terms.ids_at(range(self._terms.row_count))

    def term(self, index: int) -> str:
        """The term of id `index`."""
        return self._terms.id_at(index)

    def ids_of(self, terms: Sequence[str], add: bool = False) -> npt.NDArray[np.int64]:
        """The id of each of `terms` (-1 for one not held, unless `add` adds it)."""
        found = self._terms.rows_of(list(terms)) if terms else np.zeros(0, np.int64)
        if add and (found < 0).any():
            pairs = list(zip(terms, found.tolist(), strict=True))
            fresh = list(dict.fromkeys(term for term, at in pairs if at < 0))
            first = self._terms.row_count
            self._terms.append(fresh)
            index = dict(zip(fresh, range(first, first + len(fresh)), strict=True))
            found = np.array([index.get(term, at) for term, at in pairs], np.int64)
        return found

    def _learn_many(self, analyser: Analyser, new_words: list[str]) -> npt.NDArray[np.int32]:
        """Term ids (or _STOP) of words not cached yet, adding the terms they bring in order of first use."""
        stems = analyser.terms(new_words)
        wanted = list(dict.fromkeys(stem for stem in stems if stem is not None))
        found = dict(zip(wanted, self.ids_of(wanted, add=True).tolist(), strict=True))
        return np.array([_STOP if stem is None else found[stem] for stem in stems], dtype=np.int32)

    def _resolve(
        self,
        analyser: Analyser,
        hashes: npt.NDArray[np.uint64],
        words_at: Callable[[IntArray], list[str]],
        by_first_use: bool,
    ) -> npt.NDArray[np.int32]:
        """Term ids of words given by hash; `words_at(positions)` spells the words at those positions
        when they are new. New terms are numbered in hash order, or in order of first use."""
        cache = self._caches.setdefault(analyser.name, _WordCache())
        distinct, first, inverse = np.unique(hashes, return_index=True, return_inverse=True)
        keys, values = cache.keys, cache.ids
        at = np.searchsorted(keys, distinct)
        if keys.size:
            clipped = np.minimum(at, keys.size - 1)
            known = keys[clipped] == distinct
            ids = np.where(known, values[clipped], _MISSING).astype(np.int32)
        else:
            known, ids = np.zeros(distinct.size, np.bool_), np.full(distinct.size, _MISSING, np.int32)
        new = np.flatnonzero(~known)
        if new.size:
            learned = new[np.argsort(first[new], kind="stable")] if by_first_use else new
            ids[learned] = self._learn_many(analyser, words_at(first[learned]))
            # `distinct` is sorted, so inserting its new hashes at their search positions keeps order.
            cache.keys = np.insert(keys, at[new], distinct[new])
            cache.ids = np.insert(values, at[new], ids[new])
        return ids[inverse.reshape(-1)]

    def _long_word_id(self, analyser: Analyser, word: str) -> int:
        cache = self._caches.setdefault(analyser.name, _WordCache())
        index = cache.long_words.get(word)
        if index is None:
            index = cache.long_words[word] = int(self._learn_many(analyser, [word])[0])
        return index

    def encode_many(
        self, texts: Sequence[str], languages: Sequence[str] | None = None
    ) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """Term ids of all `texts` (in no particular order), the text each belongs to, and each text's length.

        `languages` gives each text's `lang` (default: English for all). Plain ASCII texts, the common
        case, are split and hashed word by word in numpy; others go through `words`. Both give the same
        terms (a test holds them equal). Texts are taken ~8 MB at a time, which bounds the temporary
        arrays and word lists.
        """
        if languages is not None and len(languages) != len(texts):
            raise ValueError(f"got {len(texts)} texts but {len(languages)} languages")
        by_language: dict[Analyser, list[int]] = {}
        if languages is None:
            by_language[analyser_for(DEFAULT_LANGUAGE)] = list(range(len(texts)))
        else:
            for row, code in enumerate(languages):
                by_language.setdefault(analyser_for(code), []).append(row)
        plain = np.fromiter(map(str.isascii, texts), np.bool_, len(texts))
        sizes = np.fromiter(map(len, texts), np.int64, len(texts)) + 1
        id_parts, owner_parts = [], []
        for analyser, members in by_language.items():
            rows = np.array(members, np.int64)
            for chunk in _chunks(rows[plain[rows]], sizes):
                ids, owners = self._encode_ascii(analyser, _texts_of(texts, chunk))
                id_parts.append(ids)
                owner_parts.append(chunk[owners])
            for chunk in _chunks(rows[~plain[rows]], sizes):
                word_lists = [words(text) for text in _texts_of(texts, chunk)]
                ids, owners = self._encode_words(analyser, word_lists)
                id_parts.append(ids)
                owner_parts.append(chunk[owners])
        ids = np.concatenate(id_parts) if id_parts else np.zeros(0, np.int32)
        owners = np.concatenate(owner_parts) if owner_parts else np.zeros(0, np.int64)
        kept = ids >= 0  # stopwords drop out, and out of the lengths
        ids, owners = ids[kept], owners[kept]
        return ids, owners, np.bincount(owners, minlength=len(texts)).astype(np.int64)

    def _encode_words(
        self, analyser: Analyser, word_lists: Sequence[list[str]]
    ) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int64]]:
        found = [word for words_of_text in word_lists for word in words_of_text]
        ids = self._ids_of_words(analyser, found)
        sizes = np.fromiter(map(len, word_lists), dtype=np.int64, count=len(word_lists))
        return ids, np.repeat(np.arange(len(word_lists), dtype=np.int64), sizes)

    def _ids_of_words(self, analyser: Analyser, found: Sequence[str]) -> npt.NDArray[np.int32]:
        """Term ids (or _STOP) of words given as `str`, hashed over their UTF-8 bytes like ASCII words."""
        position: dict[str, int] = {}
        index = np.fromiter((position.setdefault(w, len(position)) for w in found), np.int64, len(found))
        distinct = list(position)
        encoded = [word.encode("utf-8", "surrogatepass") for word in distinct]
        lengths = np.fromiter(map(len, encoded), np.intp, len(encoded))
        starts = np.cumsum(lengths) - lengths
        data = np.frombuffer(b"".join(encoded), np.uint8)
        ids = np.empty(len(distinct), np.int32)
        short = np.flatnonzero(lengths <= _MAX_HASHED)
        ids[short] = self._resolve(
            analyser,
            _word_hashes(data, starts[short], lengths[short]),
            lambda at: [distinct[i] for i in short[at].tolist()],
            by_first_use=True,
        )
        for i in np.flatnonzero(lengths > _MAX_HASHED).tolist():
            ids[i] = self._long_word_id(analyser, distinct[i])
        return ids[index]

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
        ids = np.empty(starts.size, dtype=np.int32)
        short = lengths <= _MAX_HASHED
        short_starts, short_lengths = starts[short], lengths[short]

        def spelt(at: IntArray) -> list[str]:
            return _spelt(data, short_starts[at], short_lengths[at])

        hashes = _word_hashes(data, short_starts, short_lengths)
        ids[short] = self._resolve(analyser, hashes, spelt, by_first_use=False)
        for position in np.flatnonzero(~short).tolist():  # rare: very long tokens (URLs, blobs)
            ids[position] = self._long_word_id(analyser, joined[starts[position] : ends[position]])
        compound_names, pairs = _compound_names(joined, data, starts, ends)
        symbol_names, marked = _symbol_names(joined, data, starts, ends)
        part_names, part_owners = _part_names(written, text_ends)
        names = compound_names + symbol_names + part_names
        if not names:
            return ids, owners
        extra_owners = np.concatenate([owners[np.concatenate([pairs, marked])], part_owners])
        return (
            np.concatenate([ids, self._ids_of_words(analyser, names)]),
            np.concatenate([owners, extra_owners]),
        )

    def encode_query(self, text: str, language: str = DEFAULT_LANGUAGE) -> dict[int, float]:
        """The query's terms in `language` that some document holds, by id, with their frequency."""
        weights = query_weights(text, language)
        if not weights:
            return {}
        ids = self.ids_of(list(weights)).tolist()
        return {index: weight for index, weight in zip(ids, weights.values(), strict=True) if index >= 0}


Positions = npt.NDArray[np.intp]


def _spelt(data: npt.NDArray[np.uint8], starts: Positions, lengths: Positions) -> list[str]:
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


def _compound_names(
    joined: str, data: npt.NDArray[np.uint8], starts: Positions, ends: Positions
) -> tuple[list[str], Positions]:
    """Each pair of words one hyphen or slash apart, joined (see `compounds`), and its first word's
    position among the words."""
    gap = ends[:-1]
    pairs = np.flatnonzero((starts[1:] == gap + 1) & ((data[gap] == _HYPHEN) | (data[gap] == _SLASH)))
    # Few words are hyphenated, so a Python step per compound costs little.
    bounds = zip(
        starts[pairs].tolist(),
        ends[pairs].tolist(),
        starts[pairs + 1].tolist(),
        ends[pairs + 1].tolist(),
        strict=True,
    )
    return [joined[a:b] + joined[c:d] for a, b, c, d in bounds], pairs


def _part_names(written: str, text_ends: IntArray) -> tuple[list[str], IntArray]:
    """The `identifier_parts` of the joined ASCII texts as written, and the text each belongs to."""
    data = np.frombuffer(written.encode("ascii"), dtype=np.uint8)
    lower = (data >= ord("a")) & (data <= ord("z"))
    upper = (data >= ord("A")) & (data <= ord("Z"))
    joins = np.flatnonzero(lower[:-3] & lower[1:-2] & upper[2:-1] & lower[3:])  # `_CASE_JOIN`
    names: list[str] = []
    at: list[int] = []
    # Few words are written in mixed case, so a Python step per word costs little.
    for start, word in _mixed_case_words(written, joins.tolist()):
        parts = _CASE_PART.findall(word)
        names.extend(part.lower() for part in parts)
        at.extend([start] * len(parts))
    return names, np.searchsorted(text_ends, np.array(at, np.int64), side="right").astype(np.int64)


def _symbol_names(
    joined: str, data: npt.NDArray[np.uint8], starts: Positions, ends: Positions
) -> tuple[list[str], Positions]:
    """Each word written with "++" or "#", spelt out (see `symbol_words`), and its position."""
    after = np.append(data, [0, 0])  # two bytes of padding: every word end can look two ahead
    plus = (after[ends] == _PLUS) & (after[ends + 1] == _PLUS)
    sharp = (after[ends] == _HASH) & (ends - starts == 1) & (data[starts] >= ord("a"))
    found = np.flatnonzero(plus | sharp)
    # Few words carry these symbols, so a Python step per word costs little.
    bounds = zip(starts[found].tolist(), ends[found].tolist(), plus[found].tolist(), strict=True)
    return [joined[a:b] + ("pp" if is_plus else "sharp") for a, b, is_plus in bounds], found
