"""From units to chunks ready to embed: stable ids, provenance metadata, and change fingerprints.

Example:
    >>> from ingest.readers import Unit
    >>> from ingest.splitters import RecursiveSplitter
    >>> chunks = make_chunks("a.txt", [Unit("Hello there.", {"source": "a.txt"})], RecursiveSplitter(50, 5))
    >>> chunks[0].metadata["chunk_index"], chunks[0].metadata["char_end"]
    (0, 12)
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from ingest.language import UNDETERMINED, detect_language
from ingest.readers import Unit
from rag.documents import MetadataValue, check_metadata
from rag.text import with_context

__all__ = [
    "RESERVED_METADATA",
    "ChunkLike",
    "PreparedChunk",
    "Splitter",
    "chunk_id",
    "embedding_input",
    "make_chunks",
]
_CONTEXT_KEY = "|embed=title>headings:text"

RESERVED_METADATA = frozenset({"source", "root", "dirs", "chunk_index", "char_start", "char_end"})
# What `json.dumps(value, default=str)` uses, built once: `dumps` builds a new encoder per call when given
# `default`, which cost more than the encoding of a chunk's metadata.
_FINGERPRINT_JSON = json.JSONEncoder(default=str)


class ChunkLike(Protocol):
    """What a splitter returns for each piece of a unit."""

    @property
    def text(self) -> str: ...
    @property
    def metadata(self) -> Mapping[str, MetadataValue]: ...
    @property
    def char_start(self) -> int: ...
    @property
    def char_end(self) -> int: ...


class Splitter(Protocol):
    """Cuts a unit into chunks; `settings_key` names every setting that changes the cut."""

    @property
    def settings_key(self) -> str: ...
    def split(self, unit: Unit) -> Sequence[ChunkLike]: ...


def chunk_id(source_id: str, index: int, text: str, settings_key: str) -> str:
    """The stable id of a chunk: a hash of its source id, index, text and splitter settings."""
    digest = hashlib.blake2b(digest_size=16)
    for part in (source_id, str(index), text, settings_key):
        digest.update(part.encode("utf-8", "surrogatepass"))
        digest.update(b"\x00")
    return digest.hexdigest()


@dataclass
class PreparedChunk:
    """A chunk with its id and final metadata; `digest` changes when the text or any metadata does."""

    id: str
    text: str
    metadata: dict[str, MetadataValue]
    digest: str


def make_chunks(
    source: str,
    units: Sequence[Unit],
    splitter: Splitter,
    extra: Mapping[str, MetadataValue] | None = None,
    *,
    root: str | None = None,
    embed_context: bool = False,
) -> list[PreparedChunk]:
    """Split a file's units into chunks carrying `source`, `root`, `chunk_index`, offsets and `extra`.

    `source` is the path relative to the root and `root` the root's label; ids hash the source id
    `<root>/<source>` (just `source` without a root), so equal paths under two roots never share ids.
    A unit with its own record id (JSON Lines) numbers its chunks alone and adds `doc_id`, so editing one
    record leaves the ids of the others unchanged. Repeated ids (identical records) are kept once.

    `dirs` lists the folders above the file inside its root (`["docs", "docs/en"]` for
    `docs/en/guide.md`; absent at the top), so `dirs CONTAINS 'docs/en'` keeps one part of a tree.
    `lang` is the language `detect_language` finds in the chunk's text when that is clear (see
    `_chunk_language`), else in the file's (in the record's, for records with an id), unless the
    file's own fields or `extra` name one. `embed_context` (the chunk is embedded with its title and
    headings, see `embedding_input`) is part of the ids, since it changes the vectors.
    """
    settings = splitter.settings_key + (_CONTEXT_KEY if embed_context else "")
    chunks: dict[str, PreparedChunk] = {}
    running = 0
    file_id = source if root is None else f"{root}/{source}"
    placed: dict[str, MetadataValue] = (
        {"source": source} if root is None else {"source": source, "root": root}
    )
    folders = source.split("/")[:-1]
    if folders:
        placed["dirs"] = ["/".join(folders[: depth + 1]) for depth in range(len(folders))]
    file_start = _file_start(units)
    languages: dict[str, str] = {}
    for unit in units:
        source_id = file_id if unit.id is None else f"{file_id}#{unit.id}"
        base_text = file_start if unit.id is None else unit.text
        for local, piece in enumerate(splitter.split(unit)):
            index = running if unit.id is None else local
            running += 1
            cid = chunk_id(source_id, index, piece.text, settings)
            metadata: dict[str, MetadataValue] = {**unit.metadata, **piece.metadata, **(extra or {})}
            if unit.id is not None:
                metadata.setdefault("doc_id", unit.id)
            if "lang" not in metadata:
                metadata["lang"] = _chunk_language(piece.text, base_text, languages)
            metadata.update(placed)
            metadata.update(chunk_index=index, char_start=piece.char_start, char_end=piece.char_end)
            metadata = check_metadata(cid, metadata)
            fingerprint = hashlib.blake2b(
                _FINGERPRINT_JSON.encode([cid, sorted(metadata.items())]).encode(), digest_size=12
            ).hexdigest()
            chunks.setdefault(cid, PreparedChunk(cid, piece.text, metadata, fingerprint))
    return list(chunks.values())


def _chunk_language(text: str, base_text: str, languages: dict[str, str]) -> str:
    """The language of a chunk's own text when it is clear, else that of `base_text`.

    Clear means 80 characters or more, at least 3 stopword hits, twice the runner-up's, and one word
    in ten a stopword of the winner: a heading, a one-line section, a code block or a table keeps its
    file's language, while an untranslated section of a translated page gets its own. `base_text`
    (the file's start, or the record) is detected when a chunk first needs it and kept in `languages`.
    """
    # A chunk that is the whole base text can only confirm its language.
    if len(text) >= 80 and text != base_text:
        own = detect_language(text, min_hits=3, margin=2.0, min_share=0.1)
        if own != UNDETERMINED:
            return own
    if base_text not in languages:
        languages[base_text] = detect_language(base_text)
    return languages[base_text]


def _file_start(units: Sequence[Unit], sample: int = 5_000) -> str:
    """The first `sample` characters of a file's units without record ids: what its language is read from."""
    parts: list[str] = []
    size = 0
    for unit in units:
        if unit.id is None and size < sample:
            parts.append(unit.text[: sample - size])
            size += len(parts[-1])
    return "\n".join(parts)


def embedding_input(text: str, metadata: Mapping[str, MetadataValue]) -> str:
    """What the embedder reads for a chunk with its context: `"title > heading > ...: text"`.

    The composition every lexical index also indexes (`rag.text.with_context`): the title and heading
    path say what a chunk is about when its own words do not.

    Example:
        >>> embedding_input("Use Path().", {"title": "FastAPI", "headings": ["Path Parameters"]})
        'FastAPI > Path Parameters: Use Path().'
    """
    return with_context(text, metadata)
