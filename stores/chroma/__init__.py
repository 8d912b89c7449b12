"""The Chroma store (`--store chroma`): a thin adapter over an embedded, in-process or server collection.

`store` holds `ChromaVectorStore`; `records` lays a document out in a Chroma record; `filters`
compiles filters to `where` clauses finished in Python; `search` runs HNSW search for the shared
ranking; `lexical` keeps the BM25 index beside the collection; `client` opens clients and collections.
"""

from stores.chroma.store import ChromaVectorStore

__all__ = ["ChromaVectorStore"]
