"""Images in user messages: the exact OpenAI content parts on the wire (a loopback server records the
request), memory that keeps a placeholder and never the bytes, and clear errors for bad images."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from rag.advisors import MessageChatMemoryAdvisor
from rag.chat import Media, UserMessage
from rag.client import ChatClient
from rag.errors import InvalidRequestError
from rag.memory import MessageWindowChatMemory, SQLiteChatMemoryRepository
from rag.models import OpenAIChatModel
from tests.openai_server import OpenAIServer, Reply, completion

# A real 1x1 PNG: signature, IHDR, IDAT, IEND.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


@pytest.fixture
def picture(tmp_path: Path) -> Path:
    path = tmp_path / "lamp.png"
    path.write_bytes(PNG)
    return path


def test_image_request_carries_content_parts_and_memory_keeps_no_bytes(
    openai_server: OpenAIServer, picture: Path, tmp_path: Path
) -> None:
    database = tmp_path / "memory.sqlite"
    memory = MessageWindowChatMemory(SQLiteChatMemoryRepository(database))
    openai_server.enqueue(Reply(json=completion("A brass lamp.")), Reply(json=completion("Brass.")))
    with OpenAIChatModel(base_url=openai_server.base_url, api_key="sk-test", model="vision-model") as model:
        client = ChatClient(model, advisors=[MessageChatMemoryAdvisor(memory)])
        spec = client.prompt().user(
            "What is in these pictures?", media=[picture, "https://example.com/charts/tower.webp"]
        )
        assert spec.advisors(conversation_id="c1").call().content() == "A brass lamp."
        client.prompt("And its colour?").advisors(conversation_id="c1").call().content()

    data_url = "data:image/png;base64," + base64.b64encode(PNG).decode("ascii")
    assert openai_server.requests[0].json["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is in these pictures?"},
                {"type": "image_url", "image_url": {"url": data_url}},
                {"type": "image_url", "image_url": {"url": "https://example.com/charts/tower.webp"}},
            ],
        }
    ]
    # The remembered turn: the text and a placeholder, sent back as plain text in the next request.
    stored = memory.get("c1")[0]
    assert isinstance(stored, UserMessage) and stored.media == ()
    assert stored.metadata["rag.media"] == [
        {"mime_type": "image/png", "bytes": len(PNG), "name": "lamp.png"},
        {"mime_type": "image/webp", "url": "https://example.com/charts/tower.webp"},
    ]
    assert openai_server.requests[1].json["messages"][0] == {
        "role": "user",
        "content": "What is in these pictures?",
    }
    # Nor are the bytes anywhere in the database files, raw or base64-encoded.
    stored_bytes = b"".join(path.read_bytes() for path in tmp_path.glob("memory.sqlite*"))
    assert b"lamp.png" in stored_bytes
    assert PNG[16:40] not in stored_bytes and data_url[22:60].encode() not in stored_bytes


def test_media_method_and_template_text(openai_server: OpenAIServer) -> None:
    openai_server.enqueue(Reply(json=completion("ok")))
    with OpenAIChatModel(base_url=openai_server.base_url, api_key="sk-test", model="m") as model:
        ChatClient(model).prompt("Describe {thing}.", thing="it").media(
            Media("image/png", PNG)
        ).call().content()
    content = openai_server.requests[0].json["messages"][0]["content"]
    assert content[0] == {"type": "text", "text": "Describe it."} and len(content) == 2


def test_bad_images_fail_with_a_clear_error(tmp_path: Path) -> None:
    fake = tmp_path / "notes.png"
    fake.write_text("not an image", encoding="utf-8")
    with pytest.raises(InvalidRequestError, match=r"image 'notes.png' has type 'image/png' but its bytes"):
        Media.from_file(fake)
    huge = tmp_path / "huge.jpg"
    with huge.open("wb") as handle:
        handle.truncate(21 * 1024 * 1024)  # sparse: nothing is written or read
    with pytest.raises(InvalidRequestError, match=r"huge.jpg' has 22,020,096 bytes; the largest"):
        Media.from_file(huge)
    vector = tmp_path / "logo.svg"
    vector.write_text("<svg/>", encoding="utf-8")
    with pytest.raises(InvalidRequestError, match=r"type 'image/svg\+xml', which vision models do not take"):
        Media.from_file(vector)
    with pytest.raises(InvalidRequestError, match=r"cannot read image file '.*missing.png'"):
        Media.from_file(tmp_path / "missing.png")
    with pytest.raises(InvalidRequestError, match="is not an https URL"):
        Media.from_url("http://example.com/a.png")
    with pytest.raises(InvalidRequestError, match="bytes are 'image/png'"):
        Media("image/jpeg", PNG)
    assert "iVBOR" not in repr(Media("image/png", PNG))  # the repr never shows the bytes
    with pytest.raises(InvalidRequestError, match="images were given without user text"):
        from rag.testing import FakeChatModel

        ChatClient(FakeChatModel()).prompt().media(Media("image/png", PNG)).call().content()
