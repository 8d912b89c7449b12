"""The package surface: what users import, and what importing costs."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import ingest
import rag
import rag.advisors
import rag.chat
import rag.client
import rag.mcp
import rag.memory
import rag.params
import rag.retrieval
import stores


def test_import_pulls_in_neither_chromadb_nor_torch_nor_psycopg() -> None:
    code = (
        "import sys, rag, stores, ingest, rag.cli, rag.filters, rag.embeddings, rag.chat\n"
        "heavy = sorted(m for m in ('chromadb', 'torch', 'sentence_transformers', 'transformers', "
        "'psycopg', 'pgvector') "
        "if m in sys.modules)\n"
        "print(','.join(heavy))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == ""


def _isort_key(name: str) -> tuple[int, str]:
    """Constants first, then classes, then functions: the order ruff's RUF022 keeps."""
    if name.isupper():
        return (0, name)
    return (1, name) if name[:1].isupper() else (2, name)


def test_modular_rag_names_are_pinned() -> None:
    assert "RetrievalAugmentationAdvisor" in rag.__all__
    assert rag.retrieval.__all__ == [
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


def test_modular_rag_modules_import_first_in_a_fresh_interpreter() -> None:
    # rag.advisors builds on rag.retrieval (never the reverse): every entry point must still load alone.
    for statement in (
        "import rag.retrieval.retriever",
        "import rag.params",
        "import rag.advisors.aliases",
        "import rag.client.client",
        "import rag.advisors.retrieval_augmentation",
        "import rag.retrieval.ranking",
        "from rag.retrieval import ContextualQueryAugmenter",
        "import rag.retrieval.follow_up",
    ):
        subprocess.run([sys.executable, "-c", statement], capture_output=True, text=True, check=True)


def test_advisor_and_client_names_are_pinned() -> None:
    assert rag.advisors.__all__ == [
        "CHAT_MEMORY_ORDER",
        "DEFAULT_ORDER",
        "HIGHEST_PRECEDENCE",
        "LOGGER_ORDER",
        "LOWEST_PRECEDENCE",
        "MODEL_CALL_ORDER",
        "QUESTION_ANSWER_ORDER",
        "RETURN_DIRECT",
        "SAFEGUARD_ORDER",
        "TOOL_CALLING_ORDER",
        "Advisor",
        "AdvisorChain",
        "AdvisorParams",
        "AnyAdvisor",
        "AsyncAdvisorChain",
        "AsyncCallAdvisor",
        "AsyncStreamAdvisor",
        "BaseAdvisor",
        "CallAdvisor",
        "ChatClientRequest",
        "ChatClientResponse",
        "ChatMemoryAdvisor",
        "MessageChatMemoryAdvisor",
        "ObservationEvent",
        "Observer",
        "ParamSet",
        "PromptChatMemoryAdvisor",
        "QuestionAnswerAdvisor",
        "RetrievalAugmentationAdvisor",
        "SafeGuardAdvisor",
        "SimpleLoggerAdvisor",
        "StreamAdvisor",
        "Timing",
        "ToolCallAdvisor",
        "VectorStoreChatMemoryAdvisor",
        "aggregate_chunks",
    ]
    assert rag.client.__all__ == [
        "DEFAULT_ORDER",
        "HIGHEST_PRECEDENCE",
        "LOWEST_PRECEDENCE",
        "MODEL_CALL_ORDER",
        "AdvisorChain",
        "AsyncAdvisorChain",
        "AsyncCallResponseSpec",
        "AsyncStreamResponseSpec",
        "CallResponseSpec",
        "ChatClient",
        "ChatClientRequest",
        "ChatClientRequestSpec",
        "ChatClientResponse",
        "ObservationEvent",
        "Observer",
        "StreamResponseSpec",
        "Timing",
        "aggregate_chunks",
    ]
    # The client re-exports the types the advisors package defines: one class each, not copies.
    assert rag.client.ChatClientRequest is rag.advisors.ChatClientRequest
    assert rag.client.AdvisorChain is rag.advisors.AdvisorChain
    # Memory holds repositories and ChatMemory only; the memory advisors live in rag.advisors.
    assert rag.memory.__all__ == [
        "ChatMemory",
        "ChatMemoryRepository",
        "InMemoryChatMemoryRepository",
        "MessageWindowChatMemory",
        "PostgresChatMemoryRepository",
        "SQLiteChatMemoryRepository",
        "apply_window",
        "check_conversation_id",
        "find_legacy_turns",
        "mark_legacy_turns",
        "message_from_json",
        "message_to_json",
    ]
    assert rag.params.__all__ == ["AdvisorParams", "ParamSet", "closest", "did_you_mean"]


def test_exports_are_sorted_and_resolve() -> None:
    import stores.chroma
    import stores.lexical
    import stores.numpy
    import stores.pgvector
    import stores.testing

    for package in (
        rag,
        stores,
        stores.numpy,
        stores.chroma,
        stores.lexical,
        stores.pgvector,
        stores.testing,
        ingest,
        rag.retrieval,
        rag.advisors,
        rag.client,
        rag.memory,
        rag.mcp,
    ):
        names = list(package.__all__)
        assert names == sorted(names, key=_isort_key), package.__name__
        for name in names:
            assert getattr(package, name) is not None, f"{package.__name__}.{name}"


def test_public_names_are_pinned() -> None:
    assert stores.__all__ == [
        "ChromaVectorStore",
        "LexicalIndex",
        "LexicalSettings",
        "NumpyVectorStore",
        "PgVectorStore",
    ]
    assert {"Document", "SearchRequest", "VectorStore", "RagError", "HashingEmbedding"} <= set(rag.__all__)
    assert "Capabilities" in rag.__all__
    assert "PostgresChatMemoryRepository" in rag.__all__
    assert rag.mcp.__all__ == ["McpTool", "McpTools", "create_mcp_server"]
    assert {"Media", "McpTools"} <= set(rag.__all__) and "Media" in rag.chat.__all__
    assert ingest.__all__ == [
        "SUPPORTED_SUFFIXES",
        "Chunk",
        "FileReport",
        "Home",
        "HomeLock",
        "HomeLockedError",
        "IngestPipeline",
        "IngestReport",
        "Manifest",
        "ProgressEvent",
        "ReadResult",
        "ReaderOptions",
        "RecursiveSplitter",
        "SkippedFile",
        "TerminalProgress",
        "Unit",
        "open_home",
        "read_file",
        "walk",
    ]


def test_store_family_exports_are_pinned() -> None:
    import stores.chroma
    import stores.lexical
    import stores.numpy
    import stores.pgvector
    import stores.testing

    assert stores.numpy.__all__ == ["NumpyVectorStore"]
    assert stores.chroma.__all__ == ["ChromaVectorStore"]
    assert stores.pgvector.__all__ == ["PgVectorStore"]
    assert stores.lexical.__all__ == [
        "DEFAULT_B",
        "DEFAULT_K1",
        "LexicalIndex",
        "LexicalSettings",
        "LexicalStats",
    ]
    assert stores.testing.__all__ == ["Reopen", "VectorStoreConformance"]
    # one name per store: the class's `kind` is its `--store` name and its folder in `stores/`
    for family, cls in (
        ("numpy", stores.NumpyVectorStore),
        ("chroma", stores.ChromaVectorStore),
        ("pgvector", stores.PgVectorStore),
    ):
        assert cls.kind == family and cls.__module__ == f"stores.{family}.store"
        assert cls.capabilities == rag.Capabilities(exact=family != "chroma", lexical=family != "chroma")
    from rag.config import STORE_KINDS

    assert STORE_KINDS == ("chroma", "numpy", "pgvector")


def test_observability_and_eval_exports_are_pinned() -> None:
    import rag.eval
    import rag.observability

    assert rag.observability.__all__ == [
        "Instrumentation",
        "disable_tracing",
        "enable_tracing",
        "tracing_enabled",
    ]
    assert {"ANSWER_METRICS", "JUDGE_METRICS", "AnswerScorer", "LLMJudge", "token_f1", "evaluate"} <= set(
        rag.eval.__all__
    )
    for package in (rag.observability, rag.eval):
        names = list(package.__all__)
        assert names == sorted(names, key=_isort_key), package.__name__
        assert all(getattr(package, name) is not None for name in names)


def test_tools_names_are_pinned() -> None:
    import rag.tools

    assert rag.tools.__all__ == [
        "TOOL_CONTEXT",
        "TOOL_MANUAL",
        "TOOL_MESSAGES",
        "TOOL_ROUNDS",
        "RunnableTool",
        "TodoReminderHook",
        "Tool",
        "ToolCallingManager",
        "ToolContext",
        "ToolExecutionResult",
        "ToolProvider",
        "ToolResultHook",
        "tool",
        "tools_from",
    ]
    assert list(rag.tools.__all__) == sorted(rag.tools.__all__, key=_isort_key)
    for name in rag.tools.__all__:
        assert getattr(rag.tools, name) is not None, name


def test_every_top_level_markdown_file_the_source_names_exists() -> None:
    # Docstrings and comments may point at top-level `NAME.md` files (user docs live in docs/): each exists.
    root = Path(__file__).resolve().parents[1]
    named = re.compile(r"\b([A-Z][A-Z_]+\.md)\b")
    missing = sorted(
        f"{path.relative_to(root)}: {name}"
        for package in ("rag", "stores", "ingest")
        for path in (root / package).rglob("*.py")
        for name in named.findall(path.read_text(encoding="utf-8"))
        if not (root / name).is_file()
    )
    assert missing == []
