"""SimpleLoggerAdvisor: one request line and one response line, in calls and in streams."""

from __future__ import annotations

import logging

import pytest

from rag.advisors import SimpleLoggerAdvisor
from rag.client import ChatClient
from rag.testing import FakeChatModel


def _lines(caplog: pytest.LogCaptureFixture, name: str = "rag.advisors.logger") -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == name]


@pytest.mark.parametrize("mode", ["call", "stream"])
def test_logs_request_and_aggregated_response(caplog: pytest.LogCaptureFixture, mode: str) -> None:
    client = ChatClient(FakeChatModel(default="two words"), system="sys", advisors=[SimpleLoggerAdvisor()])
    spec = client.prompt("question")
    with caplog.at_level(logging.DEBUG, logger="rag.advisors.logger"):
        text = spec.call().content() if mode == "call" else "".join(spec.stream().content())
    assert text == "two words"
    request, response = _lines(caplog)
    assert request.startswith("request: messages=[system: 'sys'; user: 'question'] options={")
    assert response.startswith("response: text='two words' tool_calls=[] finish_reason='stop' usage=Usage(")


def test_custom_formatters_logger_and_level(caplog: pytest.LogCaptureFixture) -> None:
    advisor = SimpleLoggerAdvisor(
        request_formatter=lambda r: r.user_text.upper(),
        response_formatter=lambda r: r.text[::-1],
        logger=logging.getLogger("my.app"),
        level=logging.INFO,
    )
    with caplog.at_level(logging.INFO, logger="my.app"):
        ChatClient(FakeChatModel(default="abc"), advisors=[advisor]).prompt("hi").call().content()
    assert _lines(caplog, "my.app") == ["request: HI", "response: cba"]


def test_nothing_is_formatted_when_the_level_is_off(caplog: pytest.LogCaptureFixture) -> None:
    def explode(_: object) -> str:
        raise AssertionError("formatter called while logging is off")

    advisor = SimpleLoggerAdvisor(request_formatter=explode, response_formatter=explode)
    with caplog.at_level(logging.WARNING, logger="rag.advisors.logger"):
        assert (
            ChatClient(FakeChatModel(default="ok"), advisors=[advisor]).prompt("q").call().content() == "ok"
        )
