"""`rag serve` for real: the sample docs ingested, the command started on loopback, the official `openai`
client and raw HTTP talking to it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from rag.memory import SQLiteChatMemoryRepository
from tests.e2e.serve_helpers import SAMPLE_DOCS, ServeProcess, rag_env, rag_in_process

# The tests import openai where they use it: every pytest worker imports this module to collect it, and
# importing openai takes about a second.
if TYPE_CHECKING:
    import openai

TOKEN = "s3cret-serve-token"
QUESTION = "How do I install it from source?"


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("serve") / "home"
    result = rag_in_process(["ingest", str(SAMPLE_DOCS)], rag_env(home))
    assert result.exit_code == 0, result.stderr
    return home


@pytest.fixture(scope="module")
def server(home: Path) -> Iterator[ServeProcess]:
    process = ServeProcess(["--rate-limit", "0"], rag_env(home))
    yield process
    process.stop()


@pytest.fixture(scope="module")
def guarded(home: Path) -> Iterator[tuple[ServeProcess, list[str]]]:
    """A server with a token from RAG_SERVE_TOKEN; the list receives its stderr once stopped."""
    process = ServeProcess(["--rate-limit", "0"], rag_env(home, RAG_SERVE_TOKEN=TOKEN))
    log: list[str] = []
    yield process, log
    log.append(process.stop())
    assert TOKEN not in log[0]


_open_clients: list[openai.OpenAI] = []


def _client(server: ServeProcess, key: str = "unused") -> openai.OpenAI:
    import openai

    client = openai.OpenAI(base_url=f"{server.base}/v1", api_key=key, max_retries=0)
    _open_clients.append(client)
    return client


@pytest.fixture(autouse=True)
def _close_clients() -> Iterator[None]:
    yield
    while _open_clients:
        _open_clients.pop().close()  # an unclosed client leaks its pooled sockets


def test_models_lists_the_served_model(server: ServeProcess) -> None:
    models = _client(server).models.list()
    assert [m.id for m in models.data] == ["rag"]
    assert _client(server).models.retrieve("rag").id == "rag"


def test_a_call_answers_from_the_documents_with_numbered_sources(server: ServeProcess) -> None:
    completion = _client(server).chat.completions.create(
        model="rag", messages=[{"role": "user", "content": QUESTION}]
    )
    text = completion.choices[0].message.content or ""
    assert completion.object == "chat.completion"
    assert completion.choices[0].finish_reason == "stop"
    assert "no language model was used" in text  # the offline extractive answerer
    sources = (completion.model_extra or {})["sources"]
    assert [s["index"] for s in sources] == list(range(1, len(sources) + 1))
    assert (sources[0]["source"], sources[0]["citation"]) == ("guide/install.md", "docs/guide/install.md")
    # Each file once in the text, named as `rag query` names it, with the numbers of all its passages.
    numbers = ", ".join(str(s["index"]) for s in sources if s["source"] == "guide/install.md")
    listed = text.split("\n\nSources:\n")[1]
    assert listed.startswith(f"[{numbers}] docs/guide/install.md, chunks ")
    assert listed.count("guide/install.md") == 1


def test_a_stream_gives_the_same_answer_in_chunks(server: ServeProcess) -> None:
    client = _client(server)
    whole = client.chat.completions.create(model="rag", messages=[{"role": "user", "content": QUESTION}])
    chunks = list(
        client.chat.completions.create(
            model="rag", messages=[{"role": "user", "content": QUESTION}], stream=True
        )
    )
    pieces = [c.choices[0].delta.content or "" for c in chunks if c.choices]
    assert len([p for p in pieces if p]) > 2
    assert "".join(pieces) == whole.choices[0].message.content
    assert chunks[0].choices[0].delta.role == "assistant"
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert (chunks[-1].model_extra or {})["sources"] == (whole.model_extra or {})["sources"]


def test_errors_come_in_openai_shape_with_their_status(server: ServeProcess) -> None:
    import openai

    client = _client(server)
    with pytest.raises(openai.NotFoundError) as missing:
        client.chat.completions.create(model="gpt-9", messages=[{"role": "user", "content": "hi"}])
    assert missing.value.status_code == 404
    assert missing.value.code == "model_not_found"
    with pytest.raises(openai.BadRequestError) as bad:
        client.chat.completions.create(
            model="rag", messages=[{"role": "user", "content": "hi"}], extra_body={"filter": "source =="}
        )
    assert bad.value.status_code == 400
    body: Any = bad.value.body
    assert body["param"] == "filter" and body["type"] == "invalid_request_error"
    with pytest.raises(openai.BadRequestError, match="last message must be a user message"):
        client.chat.completions.create(model="rag", messages=[{"role": "assistant", "content": "hi"}])


def test_the_token_is_required_and_checked(guarded: tuple[ServeProcess, list[str]]) -> None:
    import openai

    server, _ = guarded
    with pytest.raises(openai.AuthenticationError) as denied:
        _client(server, key="wrong-token").models.list()
    assert denied.value.status_code == 401
    assert TOKEN not in str(denied.value.body)
    raw = httpx.get(f"{server.base}/v1/models")
    assert raw.status_code == 401
    assert raw.json()["error"]["code"] == "invalid_api_key"
    assert [m.id for m in _client(server, key=TOKEN).models.list().data] == ["rag"]
    answer = _client(server, key=TOKEN).chat.completions.create(
        model="rag", messages=[{"role": "user", "content": QUESTION}]
    )
    assert answer.choices[0].message.content


def test_raw_http_stream_has_the_exact_sse_format(server: ServeProcess) -> None:
    body = {
        "model": "rag",
        "stream": True,
        "stream_options": {"include_usage": True},
        "messages": [{"role": "user", "content": QUESTION}],
    }
    with httpx.stream("POST", f"{server.base}/v1/chat/completions", json=body, timeout=30) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        raw = response.read().decode()
    assert raw.endswith("data: [DONE]\n\n")
    events = raw.split("\n\n")[:-1]
    assert all(event.startswith("data: ") and "\n" not in event for event in events)
    payloads = [json.loads(event[len("data: ") :]) for event in events[:-1]]
    assert {p["object"] for p in payloads} == {"chat.completion.chunk"}
    assert len({p["id"] for p in payloads}) == 1
    assert payloads[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    closing, usage = payloads[-2], payloads[-1]
    assert closing["choices"][0]["finish_reason"] == "stop" and closing["choices"][0]["delta"] == {}
    assert closing["sources"][0]["source"] == "guide/install.md"
    assert usage["choices"] == [] and set(usage["usage"]) == {
        "prompt_tokens",
        "completion_tokens",
        "total_tokens",
    }


def test_search_returns_json_hits_under_a_filter(server: ServeProcess) -> None:
    body = {"query": "install from source", "top_k": 2, "filter": "source == 'guide/install.md'"}
    response = httpx.post(f"{server.base}/v1/search", json=body)
    assert response.status_code == 200
    hits = response.json()["data"]
    assert 1 <= len(hits) <= 2
    assert {hit["metadata"]["source"] for hit in hits} == {"guide/install.md"}
    assert [hit["rank"] for hit in hits] == list(range(1, len(hits) + 1))
    lexical = httpx.post(f"{server.base}/v1/search", json={"query": "toolchain", "mode": "lexical"}).json()
    assert lexical["data"] and all("toolchain" in hit["text"].lower() for hit in lexical["data"])
    wrong = httpx.post(f"{server.base}/v1/search", json={"query": "x", "mode": "fuzzy"})
    assert wrong.status_code == 400
    assert set(wrong.json()["error"]) == {"message", "type", "param", "code"}
    assert "fuzzy" in wrong.json()["error"]["message"]


def test_search_filtering_source_by_identity_finds_the_file(server: ServeProcess) -> None:
    body = {"query": "install from source", "filter": "source == 'docs/guide/install.md'"}
    reply = httpx.post(f"{server.base}/v1/search", json=body).json()
    assert reply["data"] and "hint" not in reply
    assert {hit["metadata"]["source"] for hit in reply["data"]} == {"guide/install.md"}
    written = {**body, "filter": "root == 'docs' AND source == 'guide/install.md'"}
    found = httpx.post(f"{server.base}/v1/search", json=written).json()
    assert found["data"] and "hint" not in found
    assert {hit["metadata"]["source"] for hit in found["data"]} == {"guide/install.md"}
    nothing = httpx.post(
        f"{server.base}/v1/search", json={**body, "filter": "source == 'docs/none.md'"}
    ).json()
    assert nothing["data"] == [] and "hint" not in nothing  # no such file: no guess


def test_search_takes_exact(server: ServeProcess) -> None:
    body = {"query": "install from source", "top_k": 3, "mode": "vector"}
    default = httpx.post(f"{server.base}/v1/search", json=body)
    exact = httpx.post(f"{server.base}/v1/search", json={**body, "exact": True})
    assert exact.status_code == 200, exact.text
    # A collection this small is searched exactly either way: the same hits, scores included.
    assert exact.json()["data"] == default.json()["data"] and exact.json()["data"]
    wrong = httpx.post(f"{server.base}/v1/search", json={**body, "exact": "yes"})
    assert wrong.status_code == 400
    assert "exact must be True or False" in wrong.json()["error"]["message"]


def test_a_conversation_id_keeps_server_side_memory(server: ServeProcess, home: Path) -> None:
    client = _client(server)
    for question in ("How do I install it?", "And from source?"):
        client.chat.completions.create(
            model="rag",
            messages=[{"role": "user", "content": question}],
            extra_headers={"X-Conversation-Id": "conv-serve-1"},
        )
    client.chat.completions.create(model="rag", messages=[{"role": "user", "content": "Hi"}], user="conv-2")
    with SQLiteChatMemoryRepository(home / "chat" / "memory.sqlite") as repository:
        remembered = repository.find("conv-serve-1")
        assert [m.role.value for m in remembered] == ["user", "assistant", "user", "assistant"]
        assert remembered[2].text == "And from source?"
        assert [m.text for m in repository.find("conv-2")][:1] == ["Hi"]


def test_binding_beyond_loopback_needs_a_token(home: Path) -> None:
    result = rag_in_process(["serve", "--host", "0.0.0.0", "--port", "1"], rag_env(home))
    assert result.exit_code == 2
    assert "give a bearer token with --token or RAG_SERVE_TOKEN" in result.stderr
