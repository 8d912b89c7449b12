"""What the three chat memory advisors share: the conversation id, the turn bookkeeping, the fencing.

`ChatMemoryAdvisor` runs the conversation's memory around the rest of the chain: it adds memory to the
request on the way in and records the turn (the new user messages and the reply) on the way out, in one
write, only once the reply is complete. A call that fails, or a stream that fails or is abandoned,
records nothing, so memory never holds half an answer or a question without its reply.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from rag.advisors.aggregate import aggregate_chunks
from rag.advisors.base import BaseAdvisor
from rag.advisors.orders import CHAT_MEMORY_ORDER
from rag.advisors.request import CONVERSATION_ID, ChatClientRequest
from rag.advisors.response import ChatClientResponse
from rag.chat.media import forget_media
from rag.chat.messages import AssistantMessage, ChatResponse, Message, Prompt, SystemMessage, ToolMessage
from rag.chat.template import PromptTemplate
from rag.errors import InvalidRequestError, TemplateError
from rag.memory.base import check_conversation_id
from rag.tools.context import TOOL_MESSAGES

if TYPE_CHECKING:
    from rag.advisors.achain import AsyncAdvisorChain
    from rag.advisors.chain import AdvisorChain

__all__ = [
    "NEW_MESSAGES",
    "ChatMemoryAdvisor",
    "conversation_id_of",
    "fenced_lines",
    "memory_template",
    "with_system_text",
]

NEW_MESSAGES = "chat_memory_new_messages"
"""Context key: the messages the caller sent in this request, before any memory was added."""

# Characters that end a line for some readers but that JSON leaves unescaped.
_LINE_BREAKS = {"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def conversation_id_of(request: ChatClientRequest, advisor: str) -> str:
    """The request's conversation id (context key `conversation_id`).

    Raises:
        InvalidRequestError: no id, or an unusable one; there is deliberately no shared default.
    """
    if request.context.get(CONVERSATION_ID) is None:
        raise InvalidRequestError(
            f"{advisor} needs a conversation id: pass .advisors(conversation_id='...') with the request; "
            "there is no shared default conversation"
        )
    return check_conversation_id(request.context[CONVERSATION_ID])


def fenced_lines(records: Sequence[dict[str, Any]]) -> str:
    """Records as JSON, one per line: no stored text can break out of its line or fake a fence line."""
    lines = []
    for record in records:
        line = json.dumps(record, ensure_ascii=False)
        for char, escaped in _LINE_BREAKS.items():
            line = line.replace(char, escaped)
        lines.append(line)
    return "\n".join(lines)


def tool_exchange(reply: ChatResponse) -> list[Message]:
    """The tool calls and results a ToolCallAdvisor ran to produce `reply`, in order (none without tools).

    Memory advisors run before the tool advisor, so they see only the final reply; the exchange travels
    in its metadata and is stored with the turn, keeping tool call ids and their results together.
    """
    return list(reply.metadata.get(TOOL_MESSAGES, ()))


def message_record(message: Message) -> dict[str, Any]:
    """What memory shows of one message: its role and text, tool calls by name."""
    record: dict[str, Any] = {"role": message.role.value}
    if isinstance(message, ToolMessage):
        record["tool"] = message.name
    text = getattr(message, "text", None)
    if text is not None:
        record["text"] = text
    if isinstance(message, AssistantMessage) and message.tool_calls:
        record["tool_calls"] = [{"name": c.name, "arguments": c.arguments} for c in message.tool_calls]
    return record


def memory_template(value: str | PromptTemplate, memory_variable: str, what: str) -> PromptTemplate:
    """A template checked to hold `{instructions}` and the memory placeholder."""
    template = value if isinstance(value, PromptTemplate) else PromptTemplate(value)
    missing = [name for name in ("instructions", memory_variable) if name not in template.variables]
    if missing:
        raise TemplateError(f"{what} {template.template!r} lacks the placeholder(s) {missing!r}")
    return template


def with_system_text(prompt: Prompt, text: str) -> Prompt:
    """The prompt with its system text replaced, the system message's metadata kept."""
    first = next((m for m in prompt.messages if isinstance(m, SystemMessage)), None)
    system = SystemMessage(text, first.metadata) if first is not None else SystemMessage(text)
    return prompt.with_messages([system, *(m for m in prompt.messages if not isinstance(m, SystemMessage))])


class ChatMemoryAdvisor(BaseAdvisor):
    """A memory advisor's skeleton: override `augment` (way in) and `remember` (after the complete reply).

    Example:
        >>> class Counting(ChatMemoryAdvisor):
        ...     turns = 0
        ...     def remember(self, conversation_id, new_messages, reply):
        ...         self.turns += 1
        >>> from rag.client import ChatClient
        >>> from rag.testing import FakeChatModel
        >>> advisor = Counting()
        >>> _ = ChatClient(FakeChatModel(default="ok"), advisors=[advisor]).prompt("hi").advisors(
        ...     conversation_id="c1").call().content()
        >>> advisor.turns
        1
    """

    order = CHAT_MEMORY_ORDER

    def augment(self, request: ChatClientRequest, conversation_id: str) -> ChatClientRequest:
        """The request with the conversation's memory added (default: unchanged)."""
        return request

    def remember(self, conversation_id: str, new_messages: list[Message], reply: AssistantMessage) -> None:
        """Record one completed turn (default: nothing)."""

    def remember_request(
        self,
        request: ChatClientRequest,
        conversation_id: str,
        new_messages: list[Message],
        reply: AssistantMessage,
    ) -> None:
        """Record the completed turn of `request`: `remember`, for advisors that need no more. One that
        reads the request's context (vectors other advisors embedded) overrides this instead."""
        self.remember(conversation_id, new_messages, reply)

    @staticmethod
    def new_messages(request: ChatClientRequest) -> list[Message]:
        """What the caller adds in this request: every message of its prompt but the system one.

        The first memory advisor of the chain notes them in the context, so a second one (say, message
        memory plus vector memory) records the caller's messages, not the history the first one added.
        Images are returned as placeholders (`rag.chat.media.forget_media`): memory never keeps their bytes.
        """
        noted = request.context.get(NEW_MESSAGES)
        if noted is None:
            noted = [m for m in request.prompt.messages if not isinstance(m, SystemMessage)]
            request.context[NEW_MESSAGES] = noted
        return [forget_media(m) for m in noted]

    def advise_call(self, request: ChatClientRequest, chain: AdvisorChain) -> ChatClientResponse:
        conversation_id = conversation_id_of(request, self.name)
        new = self.new_messages(request)
        response = chain.next_call(self.augment(request, conversation_id))
        reply = response.chat_response
        self.remember_request(request, conversation_id, [*new, *tool_exchange(reply)], reply.message)
        return response

    def advise_stream(self, request: ChatClientRequest, chain: AdvisorChain) -> Iterator[ChatClientResponse]:
        conversation_id = conversation_id_of(request, self.name)  # fails now, not at the first chunk
        return self._stream(request, chain, conversation_id)

    def _stream(
        self, request: ChatClientRequest, chain: AdvisorChain, conversation_id: str
    ) -> Iterator[ChatClientResponse]:
        new = self.new_messages(request)
        chunks: list[ChatResponse] = []
        for response in chain.next_stream(self.augment(request, conversation_id)):
            chunks.append(response.chat_response)
            yield response
        # Reached only when the stream ended normally: an error or an abandoned stream records nothing.
        reply = aggregate_chunks(chunks)
        self.remember_request(request, conversation_id, [*new, *tool_exchange(reply)], reply.message)

    # -- async requests: the same steps; memory reads and writes (SQLite) run in worker threads ---------

    async def aadvise_call(self, request: ChatClientRequest, chain: AsyncAdvisorChain) -> ChatClientResponse:
        conversation_id = conversation_id_of(request, self.name)
        new = self.new_messages(request)
        augmented = await asyncio.to_thread(self.augment, request, conversation_id)
        response = await chain.anext_call(augmented)
        reply = response.chat_response
        await asyncio.to_thread(
            self.remember_request, request, conversation_id, [*new, *tool_exchange(reply)], reply.message
        )
        return response

    async def aadvise_stream(
        self, request: ChatClientRequest, chain: AsyncAdvisorChain
    ) -> AsyncIterator[ChatClientResponse]:
        conversation_id = conversation_id_of(request, self.name)
        new = self.new_messages(request)
        augmented = await asyncio.to_thread(self.augment, request, conversation_id)
        chunks: list[ChatResponse] = []
        async with aclosing(chain.anext_stream(augmented)) as stream:
            async for response in stream:
                chunks.append(response.chat_response)
                yield response
        # Reached only when the stream ended normally: an error, a cancellation or an abandoned stream
        # records nothing.
        reply = aggregate_chunks(chunks)
        await asyncio.to_thread(
            self.remember_request, request, conversation_id, [*new, *tool_exchange(reply)], reply.message
        )
