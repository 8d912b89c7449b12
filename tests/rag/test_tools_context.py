"""The client's default tool context, merged with the request's (its keys win), as tools see it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from rag.chat import AssistantMessage, ToolCall, ToolMessage
from rag.client import ChatClient
from rag.errors import InvalidRequestError
from rag.testing import FakeChatModel
from rag.tools import TOOL_CONTEXT, ToolCallingManager, ToolContext, tool

SEEN: list[dict[str, Any]] = []


@tool
def profile(ctx: ToolContext) -> str:
    """Who is asking, for which tenant."""
    SEEN.append(dict(ctx.values))
    return f"{ctx.get('user')}@{ctx.get('tenant')}"


def asks_profile() -> AssistantMessage:
    return AssistantMessage(tool_calls=(ToolCall("c1", "profile", "{}"),))


def tool_results(model: FakeChatModel) -> list[str]:
    return [m.text for m in model.prompts[-1].messages if isinstance(m, ToolMessage)]


@pytest.fixture(autouse=True)
def _clear_seen() -> None:
    SEEN.clear()


def test_the_default_tool_context_reaches_the_tool() -> None:
    model = FakeChatModel([asks_profile(), "ok"])
    client = ChatClient(model, tools=[profile], tool_context={"user": "ada", "tenant": "acme"})
    assert client.prompt("who am I?").call().content() == "ok"
    assert tool_results(model) == ["ada@acme"]
    assert SEEN == [{"user": "ada", "tenant": "acme"}]


@pytest.mark.parametrize("mode", ["call", "stream", "acall"])
def test_the_request_tool_context_is_merged_over_the_default(mode: str) -> None:
    model = FakeChatModel([asks_profile(), "ok"])
    client = ChatClient(model, tools=[profile], tool_context={"user": "ada", "tenant": "acme"})
    spec = client.prompt("who am I?").tool_context({"user": "bob"}, region="eu")
    if mode == "call":
        assert spec.call().content() == "ok"
    elif mode == "stream":
        assert "".join(spec.stream().content()) == "ok"
    else:
        assert asyncio.run(spec.acall().content()) == "ok"
    assert tool_results(model) == ["bob@acme"]
    assert SEEN == [{"user": "bob", "tenant": "acme", "region": "eu"}]


def test_a_request_does_not_change_the_client_default() -> None:
    given = {"user": "ada", "tenant": "acme"}
    model = FakeChatModel([asks_profile(), "one", asks_profile(), "two"])
    client = ChatClient(model, tools=[profile], tool_context=given)
    given["user"] = "mallory"  # the client keeps its own copy
    client.prompt("first").tool_context(user="bob").call().content()
    assert client.prompt("second").call().content() == "two"
    assert SEEN == [{"user": "bob", "tenant": "acme"}, {"user": "ada", "tenant": "acme"}]
    assert client.tool_context == {"user": "ada", "tenant": "acme"}


def test_the_tool_context_travels_in_the_request_context() -> None:
    client = ChatClient(FakeChatModel(default="ok"), tool_context={"tenant": "acme"})
    request = client.prompt("q").tool_context(user="bob").build_request()
    assert request.context[TOOL_CONTEXT] == {"tenant": "acme", "user": "bob"}
    assert TOOL_CONTEXT not in ChatClient(FakeChatModel(default="ok")).prompt("q").build_request().context


def test_tool_context_values_win_over_request_context_entries() -> None:
    ctx = ToolContext({"user": "from-advisors", "other": 1}, values={"user": "from-tool-context"})
    assert ctx.get("user") == "from-tool-context" and ctx.get("other") == 1 and ctx.get("none", 2) == 2


def test_a_user_run_manager_passes_the_tool_context() -> None:
    result = ToolCallingManager().execute(
        [ToolCall("c1", "profile", "{}")], [profile], ToolContext(values={"user": "eve", "tenant": "x"})
    )
    assert result.messages[0].text == "eve@x"


def test_the_repr_shows_keys_never_values() -> None:
    ctx = ToolContext({"conversation_id": "c1"}, values={"api_token": "s3cr3t-value"})
    assert "s3cr3t-value" not in repr(ctx) and "api_token" in repr(ctx)
    client = ChatClient(FakeChatModel(default="ok"), tool_context={"api_token": "s3cr3t-value"})
    assert "s3cr3t-value" not in repr(client)


@pytest.mark.parametrize("key", ["", 3])
def test_a_bad_key_is_an_error_naming_it(key: object) -> None:
    with pytest.raises(
        InvalidRequestError, match=f"tool context keys must be non-empty strings, got {key!r}"
    ):
        ChatClient(FakeChatModel(), tool_context={key: 1})  # type: ignore[dict-item]
    with pytest.raises(InvalidRequestError, match=f"got {key!r}"):
        ChatClient(FakeChatModel()).prompt("q").tool_context({key: 1})  # type: ignore[dict-item]
