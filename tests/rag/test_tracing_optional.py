"""Without the `otel` extra nothing of OpenTelemetry is imported, and everything still runs."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

_SCRIPT = textwrap.dedent(
    """
    import sys

    class BlockOpenTelemetry:
        # Behaves as if the otel extra were not installed: any import of it fails.
        def find_spec(self, name, path=None, target=None):
            if name == "opentelemetry" or name.startswith("opentelemetry."):
                raise ImportError(f"blocked: {name}")
            return None

    sys.meta_path.insert(0, BlockOpenTelemetry())

    import rag, stores, ingest, rag.cli
    from ingest.pipeline import IngestPipeline
    from ingest.splitters import RecursiveSplitter
    from rag import Document, HashingEmbedding
    from rag.advisors import QuestionAnswerAdvisor
    from rag.chat import AssistantMessage, ToolCall
    from rag.client import ChatClient
    from rag.errors import ConfigError
    from rag.observability import enable_tracing, tracing_enabled
    from rag.testing import FakeChatModel
    from rag.tools import tool
    from stores import NumpyVectorStore

    @tool
    def add(a: int, b: int) -> int:
        '''Add two integers.'''
        return a + b

    store = NumpyVectorStore(HashingEmbedding())
    IngestPipeline(store, RecursiveSplitter(200, 20)).run([sys.argv[1]])
    ask = AssistantMessage(tool_calls=[ToolCall("c1", "add", '{"a": 2, "b": 2}')])
    model = FakeChatModel([ask, "4.", ["str", "eamed"]])
    client = ChatClient(model, advisors=[QuestionAnswerAdvisor(store)], tools=[add])
    events = []
    client.observer = events.append
    assert client.prompt("beacon?").call().content() == "4."
    assert "".join(client.prompt("beacon?").stream().content()) == "streamed"
    assert events and not tracing_enabled()
    try:
        enable_tracing()
    except ConfigError as exc:
        print("error:", exc)
    print("loaded:", sorted(m for m in sys.modules if m.startswith("opentelemetry")))
    """
)


def test_nothing_of_opentelemetry_is_imported_without_the_extra(tmp_path: Path) -> None:
    (tmp_path / "beacon.md").write_text("The beacon is lit at dusk.\n", encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(tmp_path)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[-1] == "loaded: []"
    assert lines[0].startswith('error: tracing needs OpenTelemetry: pip install "rag-advisors[otel]"')


def test_importing_rag_does_not_load_opentelemetry_even_when_installed() -> None:
    code = (
        "import sys, rag, stores, ingest, rag.cli, rag.observability\n"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
