"""The Chroma store (`--store chroma`): embedded on disk, in-process, or on a Chroma server.

`store` holds `ChromaVectorStore` and `answering` how it answers a request; `client` opens clients and
collections, `records` is the record layout, `filters` compiles filters to `where` clauses, `nearest`
and `search` run vector search, `mirror` (and `mirror_files`, its saves) keeps the exact copy for exact
requests and fast filters, `lexical` and `hybrid` keep the BM25 index beside the collection. Importing
this package does not import chromadb; the first store constructed does.
"""

from stores.chroma.store import ChromaVectorStore

__all__ = ["ChromaVectorStore"]
