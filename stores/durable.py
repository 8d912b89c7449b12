"""Durable files for the stores that save to a folder: each new file flushed to disk before it is renamed
into place, then the folder entry flushed, so a power loss leaves either the old save or the new one.

Example:
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> write_new(folder / "a.json", b"{}")
    >>> sync_folder(folder)
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

__all__ = ["sync_folder", "write_new"]


def write_new(path: Path, content: bytes) -> None:
    """Create `path` (it must not exist) with `content`, and flush it to disk."""
    with open(path, "xb") as handle:
        handle.write(content)
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
