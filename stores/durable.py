"""Durable files for the stores that save to a folder (the numpy store and the lexical index).

A save writes new files with `write_new`, each flushed to disk before it is renamed into place, then
`sync_folder` flushes the folder entry, so a power loss leaves either the old save or the new one.

Example:
    >>> import tempfile
    >>> from pathlib import Path
    >>> folder = Path(tempfile.mkdtemp())
    >>> write_new(folder / "a.json", b"{}")
    >>> sync_folder(folder)
    >>> (folder / "a.json").read_bytes()
    b'{}'
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

__all__ = ["sync_folder", "write_new"]


def write_new(path: Path, content: bytes | Callable[[IO[bytes]], Any]) -> None:
    """Create `path` (it must not exist) with `content`, bytes or a function writing into the file,
    and flush it to disk."""
    with open(path, "xb") as handle:
        if isinstance(content, bytes):
            handle.write(content)
        else:
            content(handle)
        handle.flush()
        os.fsync(handle.fileno())


def sync_folder(folder: Path) -> None:
    """Flush the folder entry so a file renamed into it survives a power loss (where the OS allows)."""
    with contextlib.suppress(OSError):
        descriptor = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
