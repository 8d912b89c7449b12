"""Reading a numpy store folder saved in the first format, once, so the store can save it anew.

That format kept `vectors-<generation>.npy` and `documents-<generation>.json` (ids, texts and metadata)
beside a version 1 `manifest.json` (and derived files that are not read: the store rebuilds its BM25
index and filter columns from the documents). Every record is validated as `add` would, since JSON
carries no checksum. `NumpyVectorStore` reads such a folder when it opens it and saves it again in the
current format (`stores.numpy.persist`), so this costs one pass, once.

Example:
    >>> import json, tempfile
    >>> from pathlib import Path
    >>> folder = Path(tempfile.mkdtemp())
    >>> np.save(folder / "vectors-g.npy", np.ones((1, 2), np.float32))
    >>> _ = (folder / "documents-g.json").write_text(json.dumps(
    ...     {"ids": ["a"], "texts": ["x"], "metadata": [{"n": 1}]}))
    >>> _ = (folder / "manifest.json").write_text(json.dumps({
    ...     "format": "rag-advisors/inmemory-store", "version": 1, "model": "m", "dimensions": 2,
    ...     "count": 1, "vectors": "vectors-g.npy", "documents": "documents-g.json"}))
    >>> read_legacy(folder, "m", 2).ids
    ['a']
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from rag.documents import MetadataValue, check_metadata
from rag.errors import InvalidRequestError, StoreError
from stores.numpy.persist import check_model, generation_of, read_manifest

__all__ = ["LegacySave", "read_legacy"]


@dataclass
class LegacySave:
    """The documents of a first-format save, by row."""

    generation: str
    vectors: npt.NDArray[np.float32]
    ids: list[str]
    texts: list[str]
    metadatas: list[dict[str, MetadataValue]]


def read_legacy(folder: Path, model: str, dimensions: int) -> LegacySave:
    """The documents saved in `folder` by the first format, each record validated.

    Raises:
        EmbeddingModelMismatchError: another model's vectors.
        StoreError: unreadable, inconsistent or invalid contents (naming the folder).
    """
    manifest = read_manifest(folder)
    check_model(folder, manifest, model, dimensions)
    try:
        vectors = np.load(folder / manifest["vectors"], allow_pickle=False)
        raw = (folder / manifest["documents"]).read_bytes().decode("utf-8", "surrogatepass")
        documents = json.loads(raw)
        ids, texts, metadatas = documents["ids"], documents["texts"], documents["metadata"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise StoreError(f"cannot read the store saved in {str(folder)!r}: {exc}") from exc
    count = manifest["count"]
    if (
        vectors.dtype != np.float32
        or vectors.shape != (count, dimensions)
        or not len(ids) == len(texts) == len(metadatas) == count
    ):
        raise StoreError(f"the store saved in {str(folder)!r} is inconsistent: {count} documents expected")
    if len(set(ids)) != count:
        raise StoreError(f"the saved store in {str(folder)!r} repeats document ids")
    try:
        if not all(isinstance(doc_id, str) and doc_id for doc_id in ids) or not all(
            isinstance(text, str) for text in texts
        ):
            raise InvalidRequestError("an id or a text is not a string")
        checked = [check_metadata(doc_id, metadata) for doc_id, metadata in zip(ids, metadatas, strict=True)]
    except InvalidRequestError as exc:
        raise StoreError(f"the store saved in {str(folder)!r} holds an invalid record: {exc}") from exc
    return LegacySave(generation_of(manifest), vectors, ids, texts, checked)
