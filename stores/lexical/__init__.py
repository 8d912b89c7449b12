"""The BM25 index every store keeps beside its vectors, for lexical and hybrid search.

`index` holds `LexicalIndex`; `text`, `languages` and `fields` the text analysis, `segments` the
postings, `idmap` the packed ids and `persist` the save and load.
"""

from stores.lexical.index import DEFAULT_B, DEFAULT_K1, LexicalIndex, LexicalSettings, LexicalStats

__all__ = ["DEFAULT_B", "DEFAULT_K1", "LexicalIndex", "LexicalSettings", "LexicalStats"]
