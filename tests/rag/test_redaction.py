"""Masking secrets (rag.redaction) and the endpoint that carries them (rag.http.Endpoint)."""

from __future__ import annotations

import base64
import json
import logging
from urllib.parse import quote, quote_plus

import httpx
import pytest

from rag.config import Settings
from rag.errors import InvalidRequestError, ModelError
from rag.http import Endpoint, redact
from rag.redaction import Redactor, masked_errors, split_credentials

KEY = "sk-proj-Hq3Zt8Wm1Lx6Rv0Nc5Ub9Ye2Ks7Pd4"


@pytest.mark.parametrize(
    "copy",
    [
        KEY,
        quote(KEY, safe=""),
        quote_plus("a b" + KEY),
        json.dumps({"k": KEY.replace("-", "/")}),
        KEY.encode().hex(),
        base64.b64encode(f"Bearer {KEY}".encode()).decode(),
        base64.b64encode(f"user:{KEY}".encode()).decode(),
        base64.urlsafe_b64encode(f"x{KEY}yz".encode()).decode(),
        base64.b64encode(b"Basic " + base64.b64encode(f"u:{KEY}".encode())).decode(),  # encoded twice
        KEY[:12],  # the start of a key cut short by a server
        KEY[-10:],  # OpenAI-style "...abcd" tails longer than a few characters
        KEY[5:25],
    ],
)
def test_near_copies_are_masked(copy: str) -> None:
    redactor = Redactor([KEY, KEY.replace("-", "/")])
    masked = redactor(f"proxy saw <{copy}> and gave up")
    assert "***" in masked
    assert masked.startswith("proxy saw <") and masked.endswith("> and gave up")
    for i in range(len(KEY) - 7):
        assert KEY[i : i + 8] not in masked


def test_ordinary_text_is_left_alone() -> None:
    redactor = Redactor([KEY])
    text = "chat model 'gpt-4o-mini' at 'https://api.openai.com/v1/chat/completions' failed: sk-proj"
    assert redactor(text) == text
    assert redactor("") == "" and Redactor([])("x") == "x" and not Redactor([""])


def test_short_secrets_are_masked_only_whole() -> None:
    # Fragments of a short secret occur in ordinary text ("k" in "key"): only the whole value goes.
    redactor = Redactor(["k3y"])
    assert redactor("bad key k3y; Bearer k3y (k3y) xk3y k3yy") == "bad key ***; Bearer *** (***) xk3y k3yy"
    assert Redactor(["k"])("api-key: k") == "api-key: ***"
    basic = base64.b64encode(b"me:pw").decode()
    # The endpoint also masks the Basic token it sends, however short the user info.
    redactor = Endpoint("http://me:pw@h/v1", api_key=None).redactor
    assert redactor(f"echo: Basic {basic}; bye") == "echo: Basic ***; bye"
    assert redact("Incorrect API key provided: sk-abc", ["sk-abc"]) == "Incorrect API key provided: ***"


def test_repr_never_shows_a_secret() -> None:
    assert repr(Redactor([KEY, "other-secret-value-123"])) == "Redactor(2 secrets)"
    parts = split_credentials(f"https://me:{KEY}@host.example:8443/base/?api_key={KEY}&v=1")
    assert KEY not in repr(parts) and KEY not in parts.shown
    endpoint = Endpoint(f"https://me:{KEY}@host.example/v1", api_key=None)
    assert KEY not in repr(endpoint) + endpoint.shown
    assert endpoint.shown == "https://***@host.example/v1"


def test_split_credentials_keeps_the_query_on_every_endpoint() -> None:
    parts = split_credentials(f"https://me:{KEY}@host.example:8443/base/?api_key={KEY}&api-version=2")
    assert parts.shown == "https://***@host.example:8443/base?api_key=***&api-version=2"
    assert str(parts.endpoint("/embeddings")) == (
        f"https://host.example:8443/base/embeddings?api_key={KEY}&api-version=2"
    )
    assert (parts.username, parts.password, parts.query_secrets) == ("me", KEY, (KEY,))
    assert str(split_credentials("http://h").endpoint("chat/completions")) == "http://h/chat/completions"


def test_endpoint_headers() -> None:
    assert Endpoint("http://h/v1", api_key="sk-1").headers() == {"Authorization": "Bearer sk-1"}
    basic = Endpoint("http://me:pw@h/v1", api_key=None).headers()
    assert basic == {"Authorization": "Basic " + base64.b64encode(b"me:pw").decode()}
    assert Endpoint("http://me:pw@h/v1", api_key="sk-1").headers() == {"Authorization": "Bearer sk-1"}
    assert Endpoint("http://h/v1", api_key=None).headers() == {}


@pytest.mark.parametrize(
    "url", [f"me:{KEY}@host/v1", f"host/v1?api-key={KEY}", f"ftp://me:{KEY}@host/v1", "http://[::1/v1"]
)
def test_a_bad_base_url_is_refused_without_quoting_its_credentials(url: str) -> None:
    with pytest.raises(InvalidRequestError) as info:
        Endpoint(url, api_key=None)
    assert KEY not in str(info.value)


def test_masked_errors_rewrites_message_and_body() -> None:
    redactor = Redactor([KEY])
    with pytest.raises(ModelError) as info, masked_errors(redactor):
        raise ModelError(f"server said {KEY}", status_code=401, body=f'{{"echo": "{KEY}"}}')
    assert (str(info.value), info.value.body, info.value.status_code) == (
        "server said ***",
        '{"echo": "***"}',
        401,
    )


def test_httpx_log_lines_are_masked(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    endpoint = Endpoint(f"http://h/v1?api-key={KEY}", api_key=None)
    logging.getLogger("httpx").info("HTTP Request: %s %s", "POST", endpoint.url("embeddings"))
    assert caplog.messages == ["HTTP Request: POST http://h/v1/embeddings?api-key=***"]
    assert isinstance(endpoint.url("x"), httpx.URL)


def test_settings_repr_hides_the_base_url_and_key() -> None:
    settings = Settings(openai_base_url=f"https://me:{KEY}@h/v1?api-key={KEY}", openai_api_key=KEY)
    assert KEY not in repr(settings) and KEY not in str(settings)
