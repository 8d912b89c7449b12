"""Retrieval: rank fusion and MMR, and the stages of modular RAG (`RetrievalAugmentationAdvisor`).

Stages, each a one-method protocol (see `rag.retrieval.stages`):

- per-request search settings: `SearchParams` (as `QuestionAnswerAdvisor.Params` and
  `VectorStoreDocumentRetriever.Params`);
- query transformers: `RewriteQueryTransformer`, `CompressionQueryTransformer`,
  `TranslationQueryTransformer`; expander: `MultiQueryExpander`;
- follow-ups without a model: `ConversationQueryExpander` (the previous question joined to the new one);
- retriever: `VectorStoreDocumentRetriever`; joiners: `ConcatenationDocumentJoiner`,
  `ReciprocalRankDocumentJoiner`;
- a store as the commands read it: `DocumentsView` (documents only, never chat memory; each text once);
- post-processors: `CrossEncoderReranker`, `HttpReranker`, `NearDuplicateFilter`, `MaxPerSource`,
  `MaximalMarginalRelevance`; augmenter: `ContextualQueryAugmenter`.

Example:
    >>> from rag.retrieval import reciprocal_rank_fusion
    >>> [doc_id for doc_id, _ in reciprocal_rank_fusion([["a", "b"], ["b", "c"]])]
    ['b', 'a', 'c']
"""

from rag._lazy import lazy_exports
from rag.retrieval.augmenter import ContextualQueryAugmenter
from rag.retrieval.documents_view import DocumentsView
from rag.retrieval.expansion import MultiQueryExpander
from rag.retrieval.follow_up import ConversationQueryExpander
from rag.retrieval.fusion import reciprocal_rank_fusion, weighted_fusion
from rag.retrieval.joiners import ConcatenationDocumentJoiner, ReciprocalRankDocumentJoiner
from rag.retrieval.mmr import mmr
from rag.retrieval.params import SearchParams
from rag.retrieval.postprocessors import MaximalMarginalRelevance, MaxPerSource, NearDuplicateFilter
from rag.retrieval.rerankers import CrossEncoderReranker
from rag.retrieval.retriever import VectorStoreDocumentRetriever
from rag.retrieval.stages import (
    DocumentJoiner,
    DocumentPostProcessor,
    DocumentRetriever,
    Query,
    QueryAugmenter,
    QueryExpander,
    QueryTransformer,
)
from rag.retrieval.transformers import (
    CompressionQueryTransformer,
    RewriteQueryTransformer,
    TranslationQueryTransformer,
)
from rag.retrieval.windows import widen

__all__ = [
    "CompressionQueryTransformer",
    "ConcatenationDocumentJoiner",
    "ContextualQueryAugmenter",
    "ConversationQueryExpander",
    "CrossEncoderReranker",
    "DocumentJoiner",
    "DocumentPostProcessor",
    "DocumentRetriever",
    "DocumentsView",
    "HttpReranker",
    "MaxPerSource",
    "MaximalMarginalRelevance",
    "MultiQueryExpander",
    "NearDuplicateFilter",
    "Query",
    "QueryAugmenter",
    "QueryExpander",
    "QueryTransformer",
    "ReciprocalRankDocumentJoiner",
    "RewriteQueryTransformer",
    "SearchParams",
    "TranslationQueryTransformer",
    "VectorStoreDocumentRetriever",
    "mmr",
    "reciprocal_rank_fusion",
    "weighted_fusion",
    "widen",
]

# Its module imports httpx: loaded on first use, so `import rag` stays light (rag._lazy).
__getattr__, __dir__ = lazy_exports(__name__, globals(), {"HttpReranker": "rag.retrieval.rerank_http"})
