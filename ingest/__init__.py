"""Ingestion: readers, splitters and the incremental pipeline that fills a vector store."""

__all__: list[str] = []
