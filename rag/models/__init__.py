"""Chat models: any OpenAI-compatible endpoint, and the offline extractive answerer.

Example:
    >>> from rag.models import ExtractiveChatModel
    >>> from rag.chat import Prompt
    >>> ExtractiveChatModel().call(Prompt("Anything?")).text.startswith("I cannot answer")
    True
"""

from rag.models.extractive import ExtractiveChatModel
from rag.models.openai import OpenAIChatModel

__all__ = ["ExtractiveChatModel", "OpenAIChatModel"]
