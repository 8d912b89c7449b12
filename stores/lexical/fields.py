"""What the lexical index reads of a document: its text, a weighted field of names, and its language.

In a docs tree the page title, the section headings and the file path name the subject of a chunk
more surely than any sentence in it, so they form a second field, `names` (`field_text`), scored
BM25F-style: a term's frequency in a document is its count in the text plus `FIELD_WEIGHT` times its
count in the names, saturated once by BM25's k1; the length that b normalises counts each field's terms
once, so a long title does not make its chunks "long". The stored postings are these combined
frequencies, so every store scores the fields the same way with the same formula.

Each document also gets a marker term naming its language's analyser (`language_marker`): its posting
list tells which rows hold each language, so a search scores each document with the query analysed in
that document's language, by BM25 over that language's documents (`stores.lexical.index`).
Markers never reach the lengths, and no query word can spell one (they contain a space).

Example:
    >>> field_text({"title": "Guide", "headings": ["Install", "Linux"], "source": "docs/setup-linux.md"})
    'Guide\\nInstall\\nLinux\\ndocs setup linux'
    >>> from stores.lexical.text import Vocabulary
    >>> vocabulary = Vocabulary()
    >>> encoded = encode_documents(vocabulary, ["Run it."], [{"title": "Running"}])
    >>> encoded.lengths.tolist(), sorted(vocabulary.terms)
    ([2], [' lang:en', 'run'])
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from rag.documents import MetadataValue
from stores.lexical.languages import language_of
from stores.lexical.text import Vocabulary

__all__ = [
    "FIELD_WEIGHT",
    "MARKER_PREFIX",
    "Encoded",
    "encode_documents",
    "field_text",
    "is_marker",
    "language_marker",
]

# How much more a term in the title, headings or path counts than one in the text. Chosen on the
# docs-tree sets of `benchmarks/quality.py`, fitted on half of each set's questions (docs/retrieval.md).
FIELD_WEIGHT = 2
MARKER_PREFIX = " lang:"
_EXTENSION = re.compile(r"\.[A-Za-z0-9]{1,8}$")
_PATH_SEPARATORS = re.compile(r"[/\\_.\-]+")


def language_marker(language: str) -> str:
    """The marker term of documents analysed in `language` (an analyser name)."""
    return MARKER_PREFIX + language


def is_marker(term: str) -> bool:
    """Whether `term` is a language marker rather than a word's term."""
    return term.startswith(MARKER_PREFIX)


def _path_words(source: str) -> str:
    """The words of a file path: folders and the file name without its extension."""
    return _PATH_SEPARATORS.sub(" ", _EXTENSION.sub("", source)).strip()


def field_text(metadata: Mapping[str, MetadataValue]) -> str:
    """The names field of a document: its `title`, its `headings` and the words of its `source` path,
    one per line ("" when it has none of them)."""
    parts: list[str] = []
    title = metadata.get("title")
    if isinstance(title, str) and title.strip():
        parts.append(title.strip())
    headings = metadata.get("headings")
    if isinstance(headings, list):
        parts.extend(str(heading).strip() for heading in headings if str(heading).strip())
    source = metadata.get("source")
    if isinstance(source, str) and source.strip():
        parts.append(_path_words(source))
    return "\n".join(part for part in parts if part)


@dataclass(frozen=True)
class Encoded:
    """Postings of a batch of documents: one term id per (weighted) occurrence, the document of each,
    and each document's length in terms."""

    ids: npt.NDArray[np.int32]
    owners: npt.NDArray[np.int64]
    lengths: npt.NDArray[np.int64]


def encode_documents(
    vocabulary: Vocabulary,
    texts: Sequence[str],
    metadatas: Sequence[Mapping[str, MetadataValue]] | None = None,
    field_weight: int = FIELD_WEIGHT,
) -> Encoded:
    """The postings of documents with these texts and metadata (see the module docstring)."""
    if metadatas is None:
        metadatas = [{}] * len(texts)
    if len(metadatas) != len(texts):
        raise ValueError(f"got {len(texts)} texts but {len(metadatas)} metadata mappings")
    languages = [language_of(metadata.get("lang")) for metadata in metadatas]
    ids, owners, lengths = vocabulary.encode_many(texts, languages)
    names = [field_text(metadata) for metadata in metadatas]
    named = [row for row, name in enumerate(names) if name]
    if named:
        field_ids, field_rows, field_lengths = vocabulary.encode_many(
            [names[row] for row in named], [languages[row] for row in named]
        )
        rows = np.array(named, np.int64)
        lengths = lengths.copy()
        lengths[rows] += field_lengths
        ids = np.concatenate([ids, np.repeat(field_ids, field_weight)])
        owners = np.concatenate([owners, np.repeat(rows[field_rows], field_weight)])
    markers = vocabulary.ids_of([language_marker(language) for language in languages], add=True)
    ids = np.concatenate([ids, markers.astype(np.int32)])
    owners = np.concatenate([owners, np.arange(len(texts), dtype=np.int64)])
    return Encoded(ids, owners, lengths)
