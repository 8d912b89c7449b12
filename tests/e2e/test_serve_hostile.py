"""`rag serve` against malformed and hostile requests, on the app under a real uvicorn on loopback:
every client mistake is a 400 in OpenAI's shape naming the field, huge filters are refused by a named
limit, wrong tokens are throttled, and the conversation header is read as UTF-8."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from rag.documents import Document, SearchRequest
from rag.embeddings import HashingEmbedding
from rag.filters import MAX_COMPARISONS, MAX_FILTER_LENGTH, MAX_LIST_VALUES
from rag.models import ExtractiveChatModel
from rag.secret import Secret
from rag.serve import RagService, ServeConfig, create_app
from stores import NumpyVectorStore
from tests.e2e.serve_helpers import ThreadServer

TOKEN = "hostile-token"
QUESTION = [{"role": "user", "content": "When is the beacon lit?"}]


def _service() -> RagService:
    store = NumpyVectorStore(HashingEmbedding(dimensions=64))
    store.add(
        [
            Document("d1", "The beacon is lit at dusk.", {"source": "beacon.md", "n": 1}),
            Document("d2", "The harbour closes at noon.", {"source": "harbour.md", "n": 2}),
        ]
    )
    return RagService(store, ExtractiveChatModel(), SearchRequest("defaults"))


@pytest.fixture(scope="module")
def server() -> Iterator[ThreadServer]:
    running = ThreadServer(create_app(_service(), ServeConfig(rate_limit=0)))
    yield running
    running.stop()


def _post(server: ThreadServer, path: str, body: Any, **headers: str) -> httpx.Response:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    kind = {"Content-Type": "application/json"}
    return httpx.post(f"{server.base}{path}", content=content, headers={**kind, **headers}, timeout=60)


def _error(response: httpx.Response) -> dict[str, Any]:
    assert 400 <= response.status_code < 500, response.text
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    return dict(error)


def _chat(**fields: Any) -> dict[str, Any]:
    return {"model": "rag", "messages": QUESTION, **fields}


BAD_CHAT_BODIES = [
    (b'{"model": "rag", "messages": [{"role": "user", "content": "a\\ud800b"}]}', "messages[0].content"),
    (b'{"model": "rag", "messages": [{"role": "user", "content": "hi"}], "temperature": NaN}', "temperature"),
    (json.dumps(_chat(stream="yes")).encode(), "stream"),
    (json.dumps(_chat(temperature="hot")).encode(), "temperature"),
    (json.dumps(_chat(max_tokens=-5)).encode(), "max_tokens"),
    (json.dumps(_chat(stop=[1, 2])).encode(), "stop"),
    (json.dumps(_chat(top_p=3)).encode(), "top_p"),
    (json.dumps(_chat(stream_options={"include_usage": "yes"})).encode(), "stream_options.include_usage"),
    (json.dumps(_chat(top_k="many")).encode(), "top_k"),
    (json.dumps(_chat(filter="n = 1")).encode(), "filter"),
    (b'{"model": "rag", "messages": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", None),
    (b'{"model": "rag", "messages": ' + b"[" * 100 + b"]" * 100 + b"}", "messages" + "[0]" * 63),
]


@pytest.mark.parametrize(("body", "param"), BAD_CHAT_BODIES)
def test_malformed_chat_bodies_are_400_naming_the_field(
    server: ThreadServer, body: bytes, param: str | None
) -> None:
    with httpx.Client(base_url=server.base, timeout=60) as client:
        response = client.post("/v1/chat/completions", content=body)
        error = _error(response)
        assert response.status_code == 400 and error["type"] == "invalid_request_error"
        assert error["param"] == param, error
        assert response.headers.get("connection") != "close"
        assert client.get("/health").status_code == 200  # the same kept-alive connection still works


def test_a_search_names_an_unknown_field_and_a_lone_surrogate(server: ThreadServer) -> None:
    error = _error(_post(server, "/v1/search", {"qury": "beacon"}))
    assert error["param"] == "qury" and "did you mean 'query'" in error["message"]
    error = _error(_post(server, "/v1/search", b'{"query": "\\udfff"}'))
    assert error["param"] == "query" and "lone surrogate" in error["message"]
    error = _error(_post(server, "/v1/search", {"query": "beacon", "top_k": -1}))
    assert error["param"] == "top_k"


def test_huge_filters_are_refused_by_a_named_limit(server: ThreadServer) -> None:
    long_chain = " AND ".join(["n == 1"] * 90_000)  # 990 KB, under the body limit
    error = _error(_post(server, "/v1/search", {"query": "beacon", "filter": long_chain}))
    assert error["param"] == "filter" and f"the limit is {MAX_FILTER_LENGTH}" in error["message"]
    many = " OR ".join(["n == 1"] * (MAX_COMPARISONS + 1))
    error = _error(_post(server, "/v1/chat/completions", _chat(filter=many)))
    assert error["param"] == "filter" and f"the limit is {MAX_COMPARISONS}" in error["message"]
    listed = "n IN [" + ",".join("1" for _ in range(MAX_LIST_VALUES + 1)) + "]"
    error = _error(_post(server, "/v1/search", {"query": "beacon", "filter": listed}))
    assert f"the limit is {MAX_LIST_VALUES}" in error["message"]
    # Within the limits, a long filter is answered (its `source` names widened without recursion).
    within = " AND ".join(["source == 'docs/beacon.md'"] * 3_000)
    reply = _post(server, "/v1/search", {"query": "beacon", "filter": within})
    assert reply.status_code == 200 and reply.json()["data"] == []


def _raw_post(server: ThreadServer, path: str, body: bytes, header: bytes) -> tuple[int, dict[str, Any]]:
    """A request written byte by byte (clients refuse to send a header value with surrounding blanks)."""
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", server.port), timeout=60) as sock:
        sock.sendall(head + header + b"\r\n\r\n" + body)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    status_line, _, rest = data.partition(b"\r\n")
    payload = rest.partition(b"\r\n\r\n")[2]
    return int(status_line.split()[1]), json.loads(payload)


def test_the_conversation_header_is_utf8_and_trimmed(server: ThreadServer) -> None:
    body = json.dumps(_chat()).encode()
    for header in ("X-Conversation-Id: café".encode(), "X-Conversation-Id: \t café  \t".encode()):
        status, reply = _raw_post(server, "/v1/chat/completions", body, header)
        assert status == 200 and reply["conversation_id"] == "café"
    with httpx.Client(base_url=server.base, timeout=60) as client:
        by_user = client.post("/v1/chat/completions", json=_chat(user=" café "))
        assert by_user.json()["conversation_id"] == "café"
        bad = client.post("/v1/chat/completions", json=_chat(), headers={"X-Conversation-Id": b"caf\xe9"})
        assert _error(bad)["param"] == "X-Conversation-Id"


def test_wrong_tokens_are_throttled_even_without_a_rate_limit() -> None:
    config = ServeConfig(token=Secret(TOKEN), rate_limit=0)
    running = ThreadServer(create_app(_service(), config))
    try:
        with httpx.Client(base_url=running.base, timeout=60) as client:
            statuses = [
                client.get("/v1/models", headers={"Authorization": f"Bearer guess-{i}"}).status_code
                for i in range(15)
            ]
            assert statuses[:10] == [401] * 10 and set(statuses[10:]) == {429}
            # Once throttled, even the right token gets no answer that would confirm a guess.
            right = client.get("/v1/models", headers={"Authorization": f"Bearer {TOKEN}"})
            assert right.status_code == 429 and int(right.headers["retry-after"]) >= 1
    finally:
        running.stop()


def test_a_non_ascii_token_is_compared_as_utf8() -> None:
    running = ThreadServer(create_app(_service(), ServeConfig(token=Secret("jeton-été"))))
    try:
        header = {"Authorization": "Bearer jeton-été".encode()}
        assert httpx.get(f"{running.base}/v1/models", headers=header).status_code == 200
    finally:
        running.stop()
