"""`FakeChatModel`: a chat model that replays a script and records every prompt."""

from __future__ import annotations

import re
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import TypeAlias

from rag.chat.messages import AssistantMessage, ChatOptions, ChatResponse, Prompt, Usage
from rag.errors import ModelError

__all__ = ["FakeChatModel", "FakeReply"]

FakeReply: TypeAlias = (
    str | list[str] | tuple[str, ...] | ChatResponse | AssistantMessage | BaseException | type[BaseException]
)
"""One scripted reply: text; text chunks (streamed one by one); a whole response; a message with tool calls;
or an exception (instance or class) to raise."""

_WORD_CHUNK = re.compile(r"\s*\S+|\s+$")


def _count_words(text: str | None) -> int:
    return len(text.split()) if text else 0


class FakeChatModel:
    """Replays scripted replies in order and records each `Prompt` in `prompts`.

    `replies` is a sequence of `FakeReply` items or a function of the prompt returning one. When the
    script runs out, `default` is replied if given, otherwise `call`/`stream` raise `ModelError`.
    Usage counts words (prompt and reply), so usage sums are easy to check.

    Example:
        >>> from rag.chat import Prompt, ToolCall
        >>> model = FakeChatModel(["Paris.", ["Stream", "ed"]])
        >>> model.call(Prompt("Capital of France?")).text
        'Paris.'
        >>> [chunk.text for chunk in model.stream(Prompt("again"))]
        ['Stream', 'ed', '']
        >>> model.prompts[0].user_text
        'Capital of France?'
    """

    __test__ = False

    def __init__(
        self,
        replies: Iterable[FakeReply] | Callable[[Prompt], FakeReply] = (),
        *,
        default: FakeReply | None = None,
        default_options: ChatOptions | None = None,
        model: str = "fake",
    ) -> None:
        self._script: deque[FakeReply] = deque()
        self._responder: Callable[[Prompt], FakeReply] | None = None
        if callable(replies):
            self._responder = replies
        else:
            self._script.extend(replies)
        self._default = default
        self._default_options = default_options or ChatOptions()
        self._model = model
        self._lock = threading.Lock()
        self.prompts: list[Prompt] = []

    @property
    def default_options(self) -> ChatOptions:
        return self._default_options

    @property
    def remaining(self) -> int:
        """How many scripted replies are left (a function script counts as 0)."""
        return len(self._script)

    def add_replies(self, *replies: FakeReply) -> None:
        """Append replies to the script."""
        with self._lock:
            self._script.extend(replies)

    def call(self, prompt: Prompt) -> ChatResponse:
        reply = self._next(prompt)
        if isinstance(reply, ChatResponse):
            return reply
        message = self._as_message(reply)
        return self._final(prompt, message, message.text)

    def stream(self, prompt: Prompt) -> Iterator[ChatResponse]:
        """Chunks of the next reply; the prompt is recorded and the reply taken now, errors raise lazily."""
        reply = self._next(prompt)
        return self._chunks(prompt, reply)

    def _chunks(self, prompt: Prompt, reply: FakeReply) -> Iterator[ChatResponse]:
        if isinstance(reply, ChatResponse):
            yield reply
            return
        message = self._as_message(reply)
        # Given chunks are streamed as given; plain text is cut into words so consumers see several chunks.
        pieces = list(reply) if isinstance(reply, list | tuple) else _WORD_CHUNK.findall(message.text or "")
        for piece in pieces:
            yield ChatResponse(AssistantMessage(piece), model=self._model)
        yield self._final(prompt, AssistantMessage(None, message.tool_calls), message.text)

    def _next(self, prompt: Prompt) -> FakeReply:
        with self._lock:
            self.prompts.append(prompt)
            if self._responder is not None:
                return self._responder(prompt)
            if self._script:
                return self._script.popleft()
            if self._default is not None:
                return self._default
        raise ModelError(
            f"FakeChatModel has no scripted reply left for prompt #{len(self.prompts)} "
            f"(user text {prompt.user_text!r}); script more replies or pass default="
        )

    @staticmethod
    def _as_message(reply: FakeReply) -> AssistantMessage:
        if isinstance(reply, BaseException) or (isinstance(reply, type) and issubclass(reply, BaseException)):
            raise reply
        if isinstance(reply, AssistantMessage):
            return reply
        if isinstance(reply, str):
            return AssistantMessage(reply)
        if isinstance(reply, list | tuple) and all(isinstance(piece, str) for piece in reply):
            return AssistantMessage("".join(reply))
        raise ModelError(f"FakeChatModel cannot reply with {reply!r}")

    def _final(self, prompt: Prompt, message: AssistantMessage, text: str | None) -> ChatResponse:
        prompt_words = sum(_count_words(getattr(m, "text", None)) for m in prompt.messages)
        usage = Usage(prompt_words, _count_words(text), prompt_words + _count_words(text))
        finish = "tool_calls" if message.tool_calls else "stop"
        return ChatResponse(message, finish_reason=finish, usage=usage, model=self._model)

    def __repr__(self) -> str:
        return f"FakeChatModel(remaining={len(self._script)}, prompts={len(self.prompts)})"
