"""Fixtures for the reader tests: write a file under a temporary root and read it back."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ingest.readers import ReaderOptions, ReadResult, read_file

Write = Callable[[str, bytes | str], Path]
Read = Callable[..., ReadResult]


@pytest.fixture
def write(tmp_path: Path) -> Write:
    """Write bytes (or UTF-8 text) to a relative path under the temporary root; return the path."""

    def _write(name: str, content: bytes | str) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
        return path

    return _write


@pytest.fixture
def read(tmp_path: Path, write: Write) -> Read:
    """Write a file, then read it through `read_file` with the temporary folder as the root."""

    def _read(name: str, content: bytes | str, **options: object) -> ReadResult:
        path = write(name, content)
        return read_file(path, root=tmp_path, options=ReaderOptions(**options))  # type: ignore[arg-type]

    return _read
