"""The numpy store (`--store numpy`): exact search over one float32 matrix, saved to a folder.

`store` holds `NumpyVectorStore` (its searches in `querying`); `search` the scoring, `columns` the
metadata columns that filters run on (`columns_file` saves them), `records` the packed texts and
metadata, `rowmap` ids and rows through the BM25 index, `compaction` how a delete keeps rows dense,
`hybrid` the lexical and hybrid candidates, `embed` the embedding helpers the other stores share, and
`persist` the atomic save and load.
"""

from stores.numpy.store import NumpyVectorStore

__all__ = ["NumpyVectorStore"]
