"""`SafeGuardAdvisor`: refuses requests that contain sensitive words, without calling the model."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Literal, TypeAlias

from rag.advisors.base import BaseAdvisor
from rag.advisors.orders import SAFEGUARD_ORDER
from rag.advisors.request import SAFEGUARD_BLOCKED, ChatClientRequest
from rag.advisors.response import ChatClientResponse
from rag.chat.messages import AssistantMessage, ChatResponse, UserMessage
from rag.errors import InvalidRequestError

if TYPE_CHECKING:
    from rag.advisors.chain import AdvisorChain

__all__ = ["DEFAULT_FAILURE_RESPONSE", "Match", "SafeGuardAdvisor"]

Match: TypeAlias = Literal["word", "substring"]
"""How a sensitive word matches: as a whole word, or anywhere in the text (Spring AI's `contains`)."""

DEFAULT_FAILURE_RESPONSE = (
    "I can't help with this request because it touches on restricted content. Please rephrase it."
)


def _fold(text: str, case_sensitive: bool = False) -> str:
    """Text compared without regard to Unicode composition and, unless `case_sensitive`, to case.

    Case folding lets "STRASSE" meet "Straße"; composition lets a decomposed "é" meet the composed one.
    """
    composed = unicodedata.normalize("NFC", text)
    return composed if case_sensitive else unicodedata.normalize("NFC", composed.casefold())


class SafeGuardAdvisor(BaseAdvisor):
    """Answers with `failure_response`, and never calls the model, when a user message holds a sensitive word.

    By default words match whole and case-insensitively: "secret" matches "SECRET!" but not "secretary".
    Word edges are Unicode-aware (letters of any script count as word characters, so scripts written
    without spaces, such as Chinese, only match as whole runs). `match="substring"` is Spring AI's rule
    instead: a word matches anywhere, inside longer words too ("secret" blocks "secretary"), which also
    catches words glued into compounds or written in scripts without spaces, at the price of false alarms
    ("ass" blocks "class"). Whole words are the default because a guard that refuses innocent questions
    gets switched off. Both modes ignore case unless `case_sensitive=True` (Spring compares as written:
    `match="substring", case_sensitive=True` is its exact behaviour). A phrase matches across any
    whitespace. Only user messages are checked: system text is the application's own. The matched word
    goes into the context under `safeguard_blocked`; the reply's metadata carries `safeguard_blocked=True`.

    Example:
        >>> from rag.client import ChatClient
        >>> from rag.testing import FakeChatModel
        >>> model = FakeChatModel(default="...")
        >>> guard = SafeGuardAdvisor(["password"], failure_response="Not that.")
        >>> ChatClient(model, advisors=[guard]).prompt("What is the admin PASSWORD?").call().content()
        'Not that.'
        >>> model.prompts
        []
    """

    order = SAFEGUARD_ORDER

    def __init__(
        self,
        sensitive_words: Iterable[str],
        *,
        failure_response: str = DEFAULT_FAILURE_RESPONSE,
        match: Match = "word",
        case_sensitive: bool = False,
        order: int | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__(order=order, name=name)
        words = [sensitive_words] if isinstance(sensitive_words, str) else list(sensitive_words)
        for word in words:
            if not isinstance(word, str) or not word.strip():
                raise InvalidRequestError(f"sensitive words must be non-empty strings, got {word!r}")
        if match not in ("word", "substring"):
            raise InvalidRequestError(f"SafeGuardAdvisor match must be 'word' or 'substring', got {match!r}")
        self.sensitive_words: tuple[str, ...] = tuple(words)
        self.failure_response = failure_response
        self.match: Match = match
        self.case_sensitive = case_sensitive
        self._patterns = [(word, self._compile(word)) for word in words]

    def _compile(self, word: str) -> re.Pattern[str]:
        phrase = r"\s+".join(re.escape(part) for part in _fold(word, self.case_sensitive).split())
        if self.match == "substring":
            return re.compile(phrase)
        # Lookarounds rather than \b, so words that start or end with a symbol ("c++") work too.
        return re.compile(rf"(?<!\w){phrase}(?!\w)")

    def find(self, text: str) -> str | None:
        """The first sensitive word found in `text`, or None."""
        folded = _fold(text, self.case_sensitive)
        for word, pattern in self._patterns:
            if pattern.search(folded):
                return word
        return None

    def _blocked(self, request: ChatClientRequest) -> ChatClientResponse | None:
        for message in request.prompt.messages:
            if isinstance(message, UserMessage):
                word = self.find(message.text)
                if word is not None:
                    request.context[SAFEGUARD_BLOCKED] = word
                    reply = ChatResponse(
                        AssistantMessage(self.failure_response), "stop", metadata={SAFEGUARD_BLOCKED: True}
                    )
                    return ChatClientResponse(reply, request.context)
        return None

    def advise_call(self, request: ChatClientRequest, chain: AdvisorChain) -> ChatClientResponse:
        refusal = self._blocked(request)
        return refusal if refusal is not None else chain.next_call(request)

    def advise_stream(self, request: ChatClientRequest, chain: AdvisorChain) -> Iterator[ChatClientResponse]:
        refusal = self._blocked(request)
        if refusal is not None:
            yield refusal
            return
        yield from chain.next_stream(request)
