"""Tracing follows an OpenTelemetry set-up the application made, without `enable_tracing()`; with none,
nothing of OpenTelemetry is imported. Each case runs in its own interpreter: a global provider can be set
only once per process, and this suite's other tests must not start tracing."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

_COMMON = """
import json, sys
import rag, stores
from rag import Document, HashingEmbedding
from rag.advisors import QuestionAnswerAdvisor
from rag.client import ChatClient
from rag.testing import FakeChatModel
from stores import NumpyVectorStore

store = NumpyVectorStore(HashingEmbedding())
store.add([Document("d1", "The beacon is lit at dusk.", {"source": "beacon.md"})])
client = ChatClient(FakeChatModel(default="At dusk."), advisors=[QuestionAnswerAdvisor(store)])
"""

_CONFIGURED = """
# The application sets OpenTelemetry up after importing rag, and never calls enable_tracing().
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from rag.observability import disable_tracing, tracing_enabled

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)

assert client.prompt("When is the beacon lit?").call().content() == "At dusk."
spans = exporter.get_finished_spans()
names = {s.context.span_id: s.name for s in spans}
tree = sorted([s.name, names.get(s.parent.span_id) if s.parent else None] for s in spans)
disable_tracing()  # the way out: no more spans, even with the provider set
exporter.clear()
client.prompt("again").call().content()
print(json.dumps({"tree": tree, "after_disable": len(exporter.get_finished_spans()),
                  "enabled": tracing_enabled()}))
"""

_NOTHING = """
from rag.observability import tracing_enabled
assert client.prompt("When is the beacon lit?").call().content() == "At dusk."
assert not tracing_enabled()
print(json.dumps(sorted(m for m in sys.modules if m.startswith("opentelemetry"))))
"""


def _run(script: str) -> object:
    code = textwrap.dedent(_COMMON) + textwrap.dedent(script)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.splitlines()[-1])


def test_a_global_tracer_provider_is_followed_without_enable_tracing() -> None:
    out = _run(_CONFIGURED)
    assert isinstance(out, dict)
    assert ["chat_client call", None] in out["tree"]
    assert ["advisor QuestionAnswerAdvisor", "chat_client call"] in out["tree"]
    assert ["query numpy", "advisor QuestionAnswerAdvisor"] in out["tree"]
    assert ["chat", "advisor QuestionAnswerAdvisor"] in out["tree"]
    assert any(name.startswith("embeddings ") and parent == "query numpy" for name, parent in out["tree"])
    assert out["after_disable"] == 0 and out["enabled"] is False


def test_without_a_provider_opentelemetry_is_never_imported() -> None:
    assert _run(_NOTHING) == []
