"""The parts of `rag serve` that need no server: request parsing, citations, limits, the binding rule."""

from __future__ import annotations

import subprocess
import sys

import pytest

from rag.chat import AssistantMessage, SystemMessage, UserMessage
from rag.documents import Document
from rag.errors import ConfigError
from rag.filters import parse
from rag.http import Secret
from rag.serve import ServeConfig, check_binding, is_loopback
from rag.serve.limits import RateLimiter
from rag.serve.wire import ApiError, citations_text, parse_chat_request, source_rows


def test_importing_rag_serve_and_the_cli_loads_no_web_stack() -> None:
    code = (
        "import sys, rag.serve, rag.cli\n"
        "print(sorted(m for m in ('starlette', 'uvicorn') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_a_chat_request_is_parsed_with_roles_parts_options_and_retrieval_fields() -> None:
    request = parse_chat_request(
        {
            "model": "rag",
            "messages": [
                {"role": "developer", "content": "Be brief."},
                {"role": "user", "content": "Hi"},
                {"role": "assistant", "content": None},
                {
                    "role": "user",
                    "content": [{"type": "text", "text": "How do I "}, {"type": "text", "text": "install?"}],
                },
            ],
            "stream": True,
            "stream_options": {"include_usage": True},
            "max_completion_tokens": 50,
            "stop": "END",
            "temperature": 0.2,
            "top_k": 2,
            "filter": "source == 'a.md'",
            "user": "conv-1",
        }
    )
    assert [type(m) for m in request.messages] == [SystemMessage, UserMessage, AssistantMessage, UserMessage]
    assert request.question == "How do I install?"
    assert (request.stream, request.include_usage, request.user) == (True, True, "conv-1")
    assert (request.options.max_tokens, request.options.stop, request.options.temperature) == (
        50,
        ("END",),
        0.2,
    )
    assert request.retrieval == {"top_k": 2, "filter": parse("source == 'a.md'")}


@pytest.mark.parametrize(
    ("body", "param", "message"),
    [
        ([], None, "must be a JSON object"),
        ({"messages": [{"role": "user", "content": "q"}]}, "model", "'model' is required"),
        ({"model": "rag", "messages": []}, "messages", "non-empty list"),
        ({"model": "rag", "messages": [{"role": "tool", "content": "x"}]}, "messages[0].role", "'tool'"),
        (
            {"model": "rag", "messages": [{"role": "user", "content": [{"type": "image_url"}]}]},
            "messages[0].content",
            "only text parts",
        ),
        ({"model": "rag", "messages": [{"role": "user", "content": "  "}]}, "messages", "last message"),
        ({"model": "rag", "messages": [{"role": "user", "content": "q"}], "user": 5}, "user", "'user'"),
    ],
)
def test_bad_chat_requests_name_the_field(body: object, param: str | None, message: str) -> None:
    with pytest.raises(ApiError, match=message) as caught:
        parse_chat_request(body)
    assert caught.value.param == param
    assert caught.value.status == 400


def test_sources_are_numbered_as_the_citations() -> None:
    documents = [
        Document("a", "text a", {"source": "guide.md", "page": 3}, score=0.9),
        Document("b", "text b", {}, score=0.5),
    ]
    rows = source_rows(documents)
    assert [(r["index"], r["source"], r["page"]) for r in rows] == [(1, "guide.md", 3), (2, None, None)]
    assert citations_text(documents) == "\n\nSources:\n[1] guide.md, page 3\n[2] b"
    assert citations_text([]) == ""


def test_the_rate_limiter_refills_continuously_per_key() -> None:
    now = [100.0]
    limiter = RateLimiter(60, clock=lambda: now[0])
    assert all(limiter.acquire("a") is None for _ in range(60))
    assert limiter.acquire("a") == pytest.approx(1.0)
    assert limiter.acquire("b") is None  # another client has its own bucket
    now[0] += 2.0
    assert limiter.acquire("a") is None
    assert RateLimiter(0).acquire("a") is None  # 0 turns the limit off


def test_binding_rules_and_a_config_that_hides_its_token() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.4") and not is_loopback("example.org")
    check_binding("127.0.0.2", None)
    check_binding("0.0.0.0", Secret("t"))
    with pytest.raises(ConfigError, match=r"'0\.0\.0\.0'"):
        check_binding("0.0.0.0", None)
    config = ServeConfig(token=Secret("very-secret"))
    assert "very-secret" not in repr(config)
    with pytest.raises(ConfigError, match="rate_limit"):
        ServeConfig(rate_limit=-1)
