"""The chat model the commands use: an OpenAI-compatible endpoint when configured, else extractive."""

from __future__ import annotations

from rag.chat.model import ChatModel
from rag.config import Settings

__all__ = ["build_chat_model", "uses_endpoint"]


def uses_endpoint(settings: Settings) -> bool:
    """Whether an endpoint is configured: `OPENAI_BASE_URL`, `OPENAI_API_KEY` or `RAG_CHAT_MODEL`."""
    return bool(settings.openai_base_url or settings.openai_api_key or settings.chat_model)


def build_chat_model(settings: Settings) -> ChatModel:
    """`OpenAIChatModel` for a configured endpoint; otherwise the offline `ExtractiveChatModel`.

    Example:
        >>> build_chat_model(Settings())
        ExtractiveChatModel(max_sentences=6)
    """
    if uses_endpoint(settings):
        from rag.models import OpenAIChatModel

        return OpenAIChatModel(
            base_url=settings.openai_base_url, api_key=settings.openai_api_key, model=settings.chat_model
        )
    from rag.models import ExtractiveChatModel

    return ExtractiveChatModel()
