"""Chat models: any OpenAI-compatible endpoint, and the offline extractive answerer.

Example:
    >>> from rag.models import ExtractiveChatModel
    >>> from rag.chat import Prompt
    >>> ExtractiveChatModel().call(Prompt("Anything?")).text.startswith("I cannot answer")
    True
"""

from typing import TYPE_CHECKING

from rag._lazy import lazy_exports
from rag.models.extractive import ExtractiveChatModel

if TYPE_CHECKING:
    from rag.models.openai import OpenAIChatModel

__all__ = ["ExtractiveChatModel", "OpenAIChatModel"]

# Their modules import httpx or pydantic: loaded on first use (see rag._lazy).
__getattr__, __dir__ = lazy_exports(
    __name__,
    globals(),
    {
        "OpenAIChatModel": "rag.models.openai",
    },
)
