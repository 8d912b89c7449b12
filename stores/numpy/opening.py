"""The parts of an opened save that a `NumpyVectorStore` reads in place or loads on first use.

Opening maps the files (`stores.numpy.persist.open_save`); this module turns them into the store's
state. The vectors, records and ids are read in place from the mappings, each block checked before
its first use. The filter columns load at the first filtered request and the BM25 index at the
first lexical or hybrid search (or the first write), each after a check of its whole files. Both are
derived data: when their files fail the check, or were not saved, they are rebuilt from the records
(a warning says so), so a damaged index costs time, never a wrong answer.

Example:
    >>> import tempfile
    >>> from stores.numpy.persist import Contents, open_save, write
    >>> records = PackedRecords()
    >>> records.write(np.arange(1), [("red fox", {"n": 1})])
    >>> folder = tempfile.mkdtemp()
    >>> _ = write(folder, Contents("m", 2, np.ones((1, 2), np.float32), records, ["a"], None, None, None))
    >>> parts = SaveParts(open_save(folder, "m", 2))
    >>> parts.records().read(0), parts.ids()[0]
    (('red fox', {'n': 1}), 'a')
"""

from __future__ import annotations

import logging

import numpy as np
import numpy.typing as npt

from rag.errors import StoreError
from stores.lexical.index import LexicalIndex
from stores.lexical.persist import from_arrays
from stores.lexical.text import TOKENIZER
from stores.numpy.columns import MetadataColumns
from stores.numpy.columns_file import columns_from_arrays
from stores.numpy.persist import OpenedSave
from stores.numpy.records import PackedRecords
from stores.numpy.saved_ids import SavedIds

__all__ = ["SaveParts"]

_log = logging.getLogger(__name__)


class SaveParts:
    """Readers over one opened save (see the module docstring)."""

    def __init__(self, opened: OpenedSave) -> None:
        self.opened = opened
        self.generation = opened.generation

    def vectors(self) -> npt.NDArray[np.float32]:
        """The vectors, mapped (copy-on-write), not yet checked (`check_vectors`)."""
        vectors: npt.NDArray[np.float32] = self.opened.files["vectors.npy"].array()
        return vectors

    def check_vectors(self) -> None:
        """Check every block of the vectors (once): before the first scan or vector read."""
        self.opened.files["vectors.npy"].check_all()

    def records(self) -> PackedRecords:
        """The records, read in place."""
        files = self.opened.files
        return PackedRecords.saved(files["records.npy"], files["record_stops.npy"], self.opened.keys)

    def ids(self) -> SavedIds:
        """The ids and their lookup tables, read in place."""
        return SavedIds(self.opened.files)

    def check_all(self) -> None:
        """Check every block of the vectors, records and ids (before a write or a save copies them;
        the derived parts are checked as they load, and rebuilt if damaged)."""
        for name, mapped in self.opened.files.items():
            if not name.startswith(("bm25.", "columns.")):
                mapped.check_all()

    def columns(self, records: PackedRecords, count: int) -> MetadataColumns:
        """The saved filter columns, or columns built from `records` when they are damaged or absent."""
        names = self.opened.columns
        if names:
            try:
                return columns_from_arrays(self.opened.arrays("columns", names), count)
            except (StoreError, KeyError, ValueError) as exc:
                _log.warning("rebuilding the filter columns of %r: %s", str(self.opened.folder), exc)
        columns = MetadataColumns()
        columns.write(np.arange(count), [metadata for _, metadata in records.read_many(range(count))])
        return columns

    def lexical(self, ids: list[str], records: PackedRecords) -> LexicalIndex:
        """The saved BM25 index, or one built from `records` when it is damaged, of another text
        analysis, or absent."""
        described = self.opened.lexical
        if described is not None:
            try:
                arrays = self.opened.arrays("bm25", list(described["arrays"]))
                saved = from_arrays(described, arrays, TOKENIZER, str(self.opened.folder))
                if len(saved.ids) == len(ids):
                    return LexicalIndex.from_saved(saved)
            except (StoreError, KeyError, TypeError, ValueError) as exc:
                if described.get("settings", {}).get("tokenizer") == TOKENIZER:
                    _log.warning("rebuilding the lexical index of %r: %s", str(self.opened.folder), exc)
        index = LexicalIndex()
        rows = records.read_many(range(len(ids)))
        index.add(ids, [text for text, _ in rows], [metadata for _, metadata in rows])
        return index
