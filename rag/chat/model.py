"""The `ChatModel` protocol that every chat model implements."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol, runtime_checkable

from rag.chat.messages import ChatOptions, ChatResponse, Prompt

__all__ = ["ChatModel"]


@runtime_checkable
class ChatModel(Protocol):
    """A chat model.

    - `call(prompt)` returns the whole reply.
    - `stream(prompt)` yields `ChatResponse` chunks: each chunk's `message.text` is the new text only;
      tool calls arrive complete on the last chunk that carries them; the last chunk has `finish_reason`
      and, when the model reports it, `usage`.
    - `default_options` are the lowest layer of `ChatOptions.merge`.
    Failures raise `rag.errors.ModelError`.
    """

    @property
    def default_options(self) -> ChatOptions: ...

    def call(self, prompt: Prompt) -> ChatResponse: ...

    def stream(self, prompt: Prompt) -> Iterator[ChatResponse]: ...
