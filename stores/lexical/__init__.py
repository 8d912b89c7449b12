"""The BM25 index every store keeps beside its vectors (`index`), with its text analysis (`text`,
`languages`, `fields`), postings (`segments`), packed ids (`idmap`) and saves (`persist`)."""

from stores.lexical.index import DEFAULT_B, DEFAULT_K1, LexicalIndex, LexicalSettings, LexicalStats

__all__ = ["DEFAULT_B", "DEFAULT_K1", "LexicalIndex", "LexicalSettings", "LexicalStats"]
