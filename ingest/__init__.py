"""Ingestion: readers, splitters, the incremental pipeline that fills a vector store, and homes.

`open_home(path)` opens the store a home folder holds (the one `rag ingest` built there) with its
recorded kind, embedder, chunking and search settings, and makes ingest pipelines into it.

Example:
    >>> from rag import HashingEmbedding
    >>> from stores import NumpyVectorStore
    >>> from ingest import IngestPipeline, RecursiveSplitter
    >>> pipeline = IngestPipeline(NumpyVectorStore(HashingEmbedding()), RecursiveSplitter())
"""

from ingest.home import Home, open_home
from ingest.lock import HomeLock, HomeLockedError
from ingest.manifest import Manifest
from ingest.pipeline import IngestPipeline
from ingest.progress import ProgressEvent, TerminalProgress
from ingest.readers import SUPPORTED_SUFFIXES, ReaderOptions, ReadResult, SkippedFile, Unit, read_file
from ingest.report import FileReport, IngestReport
from ingest.splitters import Chunk, RecursiveSplitter
from ingest.walk import walk

__all__ = [
    "SUPPORTED_SUFFIXES",
    "Chunk",
    "FileReport",
    "Home",
    "HomeLock",
    "HomeLockedError",
    "IngestPipeline",
    "IngestReport",
    "Manifest",
    "ProgressEvent",
    "ReadResult",
    "ReaderOptions",
    "RecursiveSplitter",
    "SkippedFile",
    "TerminalProgress",
    "Unit",
    "open_home",
    "read_file",
    "walk",
]
