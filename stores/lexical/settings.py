"""What a lexical index is configured with (BM25 k1 and b, the text analysis) and its statistics.

Example:
    >>> LexicalSettings().tokenizer == TOKENIZER, LexicalStats(2, 7).average_length
    (True, 3.5)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from rag.errors import InvalidRequestError
from stores.lexical.text import TOKENIZER

__all__ = ["DEFAULT_B", "DEFAULT_K1", "LexicalSettings", "LexicalStats"]

# Chosen on BEIR SciFact with the rag-en-2 analysis (docs/retrieval.md): nDCG@10 0.704 at k1=1.0, b=0.6;
# 0.701 at Lucene's 1.2 and 0.75; 0.697 at the earlier 0.9 and 0.4.
DEFAULT_K1 = 1.0
DEFAULT_B = 0.6


@dataclass(frozen=True)
class LexicalSettings:
    """What a saved index records and checks on load: BM25 parameters and the text analysis name."""

    k1: float = DEFAULT_K1
    b: float = DEFAULT_B
    tokenizer: str = TOKENIZER

    def __post_init__(self) -> None:
        if isinstance(self.k1, bool) or not isinstance(self.k1, int | float) or not 0 <= self.k1 < math.inf:
            raise InvalidRequestError(f"BM25 k1 must be a finite number >= 0, got {self.k1!r}")
        if isinstance(self.b, bool) or not isinstance(self.b, int | float) or not 0 <= self.b <= 1:
            raise InvalidRequestError(f"BM25 b must be within [0, 1], got {self.b!r}")


@dataclass(frozen=True)
class LexicalStats:
    """Collection statistics over live documents: N and the total of their lengths (in terms)."""

    documents: int
    total_length: int

    @property
    def average_length(self) -> float:
        """avgdl (0 for an empty index)."""
        return self.total_length / self.documents if self.documents else 0.0
