"""The Chroma store (`--store chroma`): embedded on disk, in-process, or on a Chroma server.

`store` holds `ChromaVectorStore`; `client` opens clients and collections, `records` is the record
layout, `filters` compiles filters to `where` clauses, `nearest` and `search` run vector search,
`lexical` and `hybrid` keep the BM25 index beside the collection. Importing this package does not import
chromadb; the first store constructed does.
"""

from stores.chroma.store import ChromaVectorStore

__all__ = ["ChromaVectorStore"]
