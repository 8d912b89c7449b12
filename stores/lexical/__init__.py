"""The BM25 index every store keeps beside its vectors, for lexical and hybrid search.

`index` holds `LexicalIndex`, `scoring` its BM25 sums, `settings` its parameters, `text` the analysis
(tokens, stopwords), `segments` the immutable postings segments, `idmap` the packed ids and id -> row
map, and `persist` the save and load.
"""

from stores.lexical.index import DEFAULT_B, DEFAULT_K1, LexicalIndex, LexicalSettings, LexicalStats

__all__ = ["DEFAULT_B", "DEFAULT_K1", "LexicalIndex", "LexicalSettings", "LexicalStats"]
