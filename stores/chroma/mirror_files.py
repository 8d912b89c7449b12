"""The exact copy of an embedded collection saved beside it, so the next process loads it instead of reading.

`stores.chroma.mirror` builds the copy with one full read of the collection (seconds at 100,000 records).
For an embedded folder (`path=`) the store saves it when it closes, in
`<path>/rag-copy/<collection>/<token>/`, named by the collection's state token
(`stores.chroma.lexical.STATE_KEY`, which every write through a store changes before and after it
touches a record). A later process loads it only when the token is still the collection's and the
record count agrees (writes by raw chromadb calls change the count but not the token); anything else,
a damaged save included, means one read from Chroma, as without a save. Saves are written to a
temporary folder and renamed into place, and older saves are removed.

Files: `vectors.npy` (the float32 matrix) and `records.json` (ids, metadata and the texts as stored).

Example:
    >>> save(snapshot, folder / "rag-copy" / "docs", token)  # doctest: +SKIP
    >>> load(folder / "rag-copy" / "docs", token, count=1200)  # doctest: +SKIP
    Snapshot(...)
"""

from __future__ import annotations

import json
import logging
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rag.errors import RagError
from stores.chroma.lexical import STATE_KEY, CollectionAccess
from stores.chroma.mirror import Mirror, Snapshot, snapshot_of

__all__ = ["FOLDER", "CopySaver", "load", "save"]

_log = logging.getLogger(__name__)

FOLDER = "rag-copy"
_FORMAT = 1


def save(copy: Snapshot, root: Path, token: str) -> None:
    """Write `copy` as the state `token` of the collection saved under `root`; drop older saves."""
    target = root / token
    if target.is_dir():
        return
    root.mkdir(parents=True, exist_ok=True)
    scratch = root / f".tmp-{uuid.uuid4().hex}"
    scratch.mkdir()
    try:
        np.save(scratch / "vectors.npy", copy.matrix, allow_pickle=False)
        records = {
            "format": _FORMAT,
            "ids": copy.ids.tolist(),
            "metadatas": copy.metadatas.tolist(),
            "texts": copy.texts,
        }
        # ASCII escapes: texts may hold lone surrogates, which UTF-8 cannot encode.
        (scratch / "records.json").write_text(json.dumps(records), "ascii")
        scratch.rename(target)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    for entry in root.iterdir():
        if entry.name != token and entry.is_dir():
            shutil.rmtree(entry, ignore_errors=True)


def load(root: Path, token: str, count: int, stamp: object) -> Snapshot | None:
    """The copy saved for state `token` holding `count` records, or None (absent, stale or damaged)."""
    folder = root / token
    if not folder.is_dir():
        return None
    try:
        records = json.loads((folder / "records.json").read_text("ascii"))
        matrix = np.load(folder / "vectors.npy", allow_pickle=False)
        if records.get("format") != _FORMAT or len(records["ids"]) != count or len(matrix) != count:
            return None
        texts = [(document, text) for document, text in records["texts"]]
        return snapshot_of(records["ids"], matrix, records["metadatas"], texts, stamp)
    except (OSError, ValueError, KeyError, TypeError):
        return None  # derived data: a damaged save is read again from Chroma


@dataclass
class CopySaver:
    """Saves a collection's copy if it is still the collection's state (at `close()`, `flush()`, exit).

    Holds no reference to the store, so it can run from the store's finalizer.
    """

    access: CollectionAccess
    root: Path
    mirror: Mirror

    def __call__(self) -> None:
        copy, token = self.mirror.held(), self.mirror.token
        if copy is None or token is None or self.mirror.saved:
            return
        try:
            if self.access.metadata().get(STATE_KEY) != token:
                return  # written since (by another store): this copy is not the collection's state
            save(copy, self.root, token)
        except (OSError, RagError) as exc:
            _log.warning("the exact copy of %r was not saved: %s", self.access.name, exc)
            return
        self.mirror.saved = True
