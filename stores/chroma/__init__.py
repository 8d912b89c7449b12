"""The Chroma store (`--store chroma`): embedded on disk, in-process, or on a Chroma server.

`store` holds `ChromaVectorStore`, `answering` how it answers a request and `reading` how it decides
filters, `get` and `count`; `client` opens clients and collections, `records` is the record layout,
`columns` keeps the metadata as numpy columns that decide filters, `filters` compiles filters to
`where` clauses, `nearest` and `search` run vector search, `mirror` (and `mirror_files`, its saves)
keeps the exact copy for exact requests, `sidecar` is the sidecar (the BM25 index, the columns and
the kept records) that `lexical` loads, rebuilds and saves beside the collection, `kept` the records
the sidecar holds (`kept_file` saves them in a folder and keeps writes over a loaded save), and
`hybrid` ranks over it.
Importing this package does not import chromadb; the first store constructed does.
"""

from stores.chroma.store import ChromaVectorStore

__all__ = ["ChromaVectorStore"]
