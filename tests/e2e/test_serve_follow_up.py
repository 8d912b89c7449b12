"""`rag serve` with the official `openai` client: a follow-up is searched with the question before it,
whether the client sends the history or the server remembers it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from tests.e2e.serve_helpers import ServeProcess, rag_env, rag_in_process
from tests.e2e.test_cli_chat_follow_up import PAGES

# The tests import openai where they use it: every pytest worker imports this module to collect it, and
# importing openai takes about a second.
if TYPE_CHECKING:
    import openai

FIRST, FOLLOW_UP = "How do I install valgrind?", "And how do I run it?"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    root = tmp_path_factory.mktemp("follow-up")
    folder, home = root / "manual", root / "home"
    folder.mkdir()
    for name, text in PAGES.items():
        (folder / name).write_text(text, encoding="utf-8")
    result = rag_in_process(["ingest", str(folder)], rag_env(home))
    assert result.exit_code == 0, result.stderr
    process = ServeProcess(["--rate-limit", "0"], rag_env(home))
    yield process
    process.stop()


def _first_source(client: openai.OpenAI, messages: Any, conversation: str | None = None) -> str:
    headers = {"X-Conversation-Id": conversation} if conversation else None
    completion = client.chat.completions.create(model="rag", messages=messages, extra_headers=headers)
    return str((completion.model_extra or {})["sources"][0]["source"])


def test_a_follow_up_with_the_history_in_the_request(server: ServeProcess) -> None:
    import openai

    with openai.OpenAI(base_url=f"{server.base}/v1", api_key="unused", max_retries=0) as client:
        history = [{"role": "user", "content": FIRST}, {"role": "assistant", "content": "apt install it."}]
        assert _first_source(client, [*history, {"role": "user", "content": FOLLOW_UP}]) == "valgrind-run.md"
        # The same question alone, without history, is searched alone: the page that says "run" most.
        assert _first_source(client, [{"role": "user", "content": FOLLOW_UP}]) == "tests.md"


def test_a_follow_up_with_the_history_kept_by_the_server(server: ServeProcess) -> None:
    import openai

    with openai.OpenAI(base_url=f"{server.base}/v1", api_key="unused", max_retries=0) as client:
        first = _first_source(client, [{"role": "user", "content": FIRST}], "valgrind-trial")
        assert first == "valgrind-install.md"
        follow_up = _first_source(client, [{"role": "user", "content": FOLLOW_UP}], "valgrind-trial")
        assert follow_up == "valgrind-run.md"
