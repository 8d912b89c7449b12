"""`SimpleLoggerAdvisor`: logs each request and response through `logging`."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from rag.advisors.base import BaseAdvisor
from rag.advisors.orders import LOGGER_ORDER
from rag.advisors.request import ChatClientRequest
from rag.advisors.response import ChatClientResponse

if TYPE_CHECKING:
    from rag.advisors.chain import AdvisorChain

__all__ = ["SimpleLoggerAdvisor", "format_request", "format_response"]

_MAX_CHARS = 2000


def _clip(text: str) -> str:
    return text if len(text) <= _MAX_CHARS else text[:_MAX_CHARS] + f"... ({len(text)} characters)"


def format_request(request: ChatClientRequest) -> str:
    """The default request line: each message's role and text, the options set, the context keys."""
    messages = "; ".join(
        f"{m.role.value}: {_clip(getattr(m, 'text', None) or '')!r}" for m in request.prompt.messages
    )
    options = request.prompt.options
    shown = {k: v for k, v in vars(options).items() if v is not None} if options is not None else {}
    return f"messages=[{messages}] options={shown!r} context_keys={sorted(request.context)!r}"


def format_response(response: ChatClientResponse) -> str:
    """The default response line: text, tool calls, finish reason, usage, metadata keys."""
    chat = response.chat_response
    calls = [f"{call.name}({call.arguments})" for call in chat.message.tool_calls]
    return (
        f"text={_clip(chat.text)!r} tool_calls={calls!r} finish_reason={chat.finish_reason!r} "
        f"usage={chat.usage!r} metadata_keys={sorted(chat.metadata)!r}"
    )


class SimpleLoggerAdvisor(BaseAdvisor):
    """Logs the request on the way in and the response on the way out (streams: once, aggregated).

    By default it sits right before the model call, so it logs the prompt as the model receives it,
    at DEBUG level on the `rag.advisors.logger` logger; formatters, logger, level and order are options.

    Example:
        >>> import logging
        >>> from rag.client import ChatClient
        >>> from rag.testing import FakeChatModel
        >>> advisor = SimpleLoggerAdvisor(level=logging.INFO, request_formatter=lambda r: r.user_text)
        >>> ChatClient(FakeChatModel(default="ok"), advisors=[advisor]).prompt("Hi").call().content()
        'ok'
    """

    order = LOGGER_ORDER

    def __init__(
        self,
        *,
        request_formatter: Callable[[ChatClientRequest], str] = format_request,
        response_formatter: Callable[[ChatClientResponse], str] = format_response,
        logger: logging.Logger | None = None,
        level: int = logging.DEBUG,
        order: int | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__(order=order, name=name)
        self.request_formatter = request_formatter
        self.response_formatter = response_formatter
        self.logger = logger or logging.getLogger("rag.advisors.logger")
        self.level = level

    def before(self, request: ChatClientRequest, chain: AdvisorChain) -> ChatClientRequest:
        if self.logger.isEnabledFor(self.level):  # formatting costs more than the check
            self.logger.log(self.level, "request: %s", self.request_formatter(request))
        return request

    def after(self, response: ChatClientResponse, chain: AdvisorChain) -> ChatClientResponse:
        if self.logger.isEnabledFor(self.level):
            self.logger.log(self.level, "response: %s", self.response_formatter(response))
        return response
