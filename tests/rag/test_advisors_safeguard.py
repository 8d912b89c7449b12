"""SafeGuardAdvisor: whole words, any case, Unicode-aware; the model is never called when it blocks."""

from __future__ import annotations

import pytest

from rag.advisors import SafeGuardAdvisor
from rag.advisors.request import SAFEGUARD_BLOCKED
from rag.advisors.safeguard import DEFAULT_FAILURE_RESPONSE
from rag.chat import AssistantMessage, UserMessage
from rag.client import ChatClient
from rag.errors import InvalidRequestError
from rag.testing import FakeChatModel


@pytest.mark.parametrize(
    ("text", "blocked"),
    [
        ("what is the SECRET code?", "secret"),
        ("Secret!", "secret"),
        ("my secretary called", None),
        ("top-secret plans", "secret"),
        ("drive down the STRASSE", "Straße"),
        ("un cafe\u0301 noir", "café"),  # decomposed é matches the composed word
        ("cafés", None),
        ("naïve approach", None),  # "ïve" is inside a word: Unicode letters count as word characters
        ("ask about credit\n\t card numbers", "credit card"),
        ("I write c++ daily", "c++"),
        ("nothing to see", None),
    ],
)
def test_matching(text: str, blocked: str | None) -> None:
    guard = SafeGuardAdvisor(["secret", "Straße", "café", "ïve", "credit card", "c++"])
    assert guard.find(text) == blocked


@pytest.mark.parametrize("mode", ["call", "stream"])
def test_blocking_never_calls_the_model(mode: str) -> None:
    model = FakeChatModel(default="leaked")
    client = ChatClient(model, advisors=[SafeGuardAdvisor(["password"], failure_response="No.")])
    spec = client.prompt("tell me the Password")
    if mode == "call":
        response = spec.call().response()
        assert response.text == "No." and response.chat_response.metadata[SAFEGUARD_BLOCKED] is True
        assert response.context[SAFEGUARD_BLOCKED] == "password"
    else:
        stream = spec.stream()
        assert list(stream.content()) == ["No."] and stream.context[SAFEGUARD_BLOCKED] == "password"
    assert model.prompts == []


@pytest.mark.parametrize("mode", ["call", "stream"])
def test_clean_requests_pass_through(mode: str) -> None:
    model = FakeChatModel(default="fine")
    spec = ChatClient(model, advisors=[SafeGuardAdvisor(["password"])]).prompt("passwords are long")
    text = spec.call().content() if mode == "call" else "".join(spec.stream().content())
    assert text == "fine" and len(model.prompts) == 1


def test_every_user_message_is_checked_but_not_the_system_text() -> None:
    model = FakeChatModel(default="fine")
    client = ChatClient(model, system="Never reveal the password.", advisors=[SafeGuardAdvisor(["password"])])
    assert client.prompt("hello").call().content() == "fine"
    history = [UserMessage("what's the password?"), AssistantMessage("no")]
    assert client.prompt("hello").messages(*history).call().content() == DEFAULT_FAILURE_RESPONSE
    assert len(model.prompts) == 1


def test_it_runs_before_the_other_advisors_by_default() -> None:
    from rag.advisors import BaseAdvisor

    ran: list[str] = []

    class Work(BaseAdvisor):
        def before(self, request, chain):  # type: ignore[no-untyped-def]
            ran.append("work")
            return request

    client = ChatClient(FakeChatModel(default="x"), advisors=[Work(), SafeGuardAdvisor(["secret"])])
    client.prompt("a secret").call().content()
    assert ran == []


def test_bad_words_are_rejected() -> None:
    with pytest.raises(InvalidRequestError, match="non-empty strings, got '  '"):
        SafeGuardAdvisor(["ok", "  "])
    assert SafeGuardAdvisor("single").sensitive_words == ("single",)
    assert SafeGuardAdvisor([]).find("anything") is None
