"""`rag ask --image FILE`: the image goes to the model as a content part beside the retrieved context;
a file that is not an image stops the command with one line and exit code 2, before any request."""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

from tests.openai_server import OpenAIServer, Reply, completion

RunCli = Callable[..., Result]
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


@pytest.fixture(autouse=True)
def _no_chat_model_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAG_CHAT_MODEL", raising=False)


def test_ask_sends_the_image_with_the_question(
    cli: RunCli, docs: Path, tmp_path: Path, openai_server: OpenAIServer
) -> None:
    assert cli("ingest", docs, "--store", "numpy").exit_code == 0
    picture = tmp_path / "lamp.png"
    picture.write_bytes(PNG)
    openai_server.enqueue(Reply(json=completion("That is the beacon lamp [1].")))
    common = ("--store", "numpy", "--top-k", "1", "--base-url", openai_server.base_url, "--model", "vision")
    result = cli("ask", "Which lamp is this?", "--image", picture, "--no-stream", *common)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("That is the beacon lamp [1].")
    (request,) = openai_server.requests
    text, image = request.json["messages"][-1]["content"]
    assert text["type"] == "text" and text["text"].startswith("Which lamp is this?\n\n")
    assert image == {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64," + base64.b64encode(PNG).decode("ascii")},
    }

    notes = tmp_path / "notes.gif"
    notes.write_text("plain text", encoding="utf-8")
    refused = cli("ask", "Which lamp is this?", "--image", notes, *common)
    assert refused.exit_code == 2
    assert "image 'notes.gif' has type 'image/gif' but its bytes" in refused.stderr
    assert "Traceback" not in refused.stderr and len(openai_server.requests) == 1
