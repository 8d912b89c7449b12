"""SafeGuardAdvisor's Spring-style substring matching beside the default whole-word matching."""

from __future__ import annotations

import pytest

from rag.advisors import SafeGuardAdvisor
from rag.client import ChatClient
from rag.errors import InvalidRequestError
from rag.testing import FakeChatModel

BLOCKED = "safeguard_blocked"  # the documented context key (its constant's module is moving)


@pytest.mark.parametrize(
    ("match", "text", "blocked"),
    [
        ("word", "my secretary called", None),
        ("substring", "my secretary called", "secret"),
        ("word", "a topsecret file", None),
        ("substring", "a topsecret file", "secret"),
        ("word", "the SECRET plan", "secret"),
        ("substring", "the SECRETARY", "secret"),  # case is ignored in both modes by default
        ("substring", "credit\n card numbers", "credit card"),  # phrases still match across whitespace
        ("substring", "nothing here", None),
    ],
)
def test_substring_matches_inside_words(match: str, text: str, blocked: str | None) -> None:
    guard = SafeGuardAdvisor(["secret", "credit card"], match=match)  # type: ignore[arg-type]
    assert guard.find(text) == blocked


def test_whole_words_stay_the_default() -> None:
    guard = SafeGuardAdvisor(["secret"])
    assert guard.match == "word" and guard.case_sensitive is False
    assert guard.find("secretary") is None


@pytest.mark.parametrize(
    ("match", "text", "blocked"),
    [
        ("substring", "the Secretary", None),  # Spring's exact rule: contains(), as written
        ("substring", "the secretary", "secret"),
        ("word", "SECRET", None),
        ("word", "secret!", "secret"),
    ],
)
def test_case_sensitive_compares_as_written(match: str, text: str, blocked: str | None) -> None:
    guard = SafeGuardAdvisor(["secret"], match=match, case_sensitive=True)  # type: ignore[arg-type]
    assert guard.find(text) == blocked


def test_case_folding_still_covers_unicode_in_substring_mode() -> None:
    guard = SafeGuardAdvisor(["straße"], match="substring")
    assert guard.find("DIE HAUPTSTRASSEN") == "straße"
    assert SafeGuardAdvisor(["straße"], match="substring", case_sensitive=True).find("HAUPTSTRASSE") is None


@pytest.mark.parametrize("mode", ["call", "stream"])
def test_substring_blocks_through_a_client_without_calling_the_model(mode: str) -> None:
    model = FakeChatModel(default="leaked")
    guard = SafeGuardAdvisor(["pass"], match="substring", failure_response="No.")
    spec = ChatClient(model, advisors=[guard]).prompt("what is the admin PASSWORD?")
    if mode == "call":
        response = spec.call().response()
        assert response.text == "No." and response.context[BLOCKED] == "pass"
    else:
        stream = spec.stream()
        assert list(stream.content()) == ["No."] and stream.context[BLOCKED] == "pass"
    assert model.prompts == []


def test_an_unknown_match_mode_is_an_error_naming_it() -> None:
    with pytest.raises(InvalidRequestError, match="'contains'"):
        SafeGuardAdvisor(["secret"], match="contains")  # type: ignore[arg-type]
