"""Readers: files in, `Unit`s with provenance metadata out.

Example:
    >>> from pathlib import Path
    >>> from ingest.readers import ReaderOptions, read_file
    >>> opts = ReaderOptions(text_field="title,text", id_field="_id")
"""

from ingest.readers.base import MetadataValue, ReaderOptions, ReadResult, SkippedFile, Unit
from ingest.readers.registry import SUPPORTED_SUFFIXES, read_file, source_name

__all__ = [
    "SUPPORTED_SUFFIXES",
    "MetadataValue",
    "ReadResult",
    "ReaderOptions",
    "SkippedFile",
    "Unit",
    "read_file",
    "source_name",
]
