"""What looking for the application's OpenTelemetry set-up costs per instrumented step.

Every instrumented step calls `rag.observability.hub.active()`. With no backend installed it looks in
`sys.modules` for `opentelemetry.trace` and, when the application (or a library such as chromadb) has
imported it, reads the global provider. Measured side by side in one process, each a median of 7 runs of
`--calls` calls: detection switched off (the floor), OpenTelemetry not imported, imported without a
provider, and a whole `ChatClient` call with a store query (for scale).

    python benchmarks/tracing_detect.py [--calls 200000]
"""

from __future__ import annotations

import argparse
import statistics
import timeit

from rag import Document, HashingEmbedding
from rag.advisors import QuestionAnswerAdvisor
from rag.client import ChatClient
from rag.observability import hub
from rag.testing import FakeChatModel
from stores import NumpyVectorStore


def _per_call(func: object, calls: int) -> float:
    runs = [timeit.timeit(func, number=calls) / calls for _ in range(7)]  # type: ignore[arg-type]
    return statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200_000)
    calls = parser.parse_args().calls
    store = NumpyVectorStore(HashingEmbedding())
    store.add([Document("d1", "The beacon is lit at dusk.", {"source": "beacon.md"})])
    client = ChatClient(FakeChatModel(default="At dusk."), advisors=[QuestionAnswerAdvisor(store)])

    rows: list[tuple[str, float]] = []
    hub.set_auto_detect(False)
    rows.append(("active(), detection off (floor)", _per_call(hub.active, calls)))
    hub.set_auto_detect(True)
    rows.append(("active(), OpenTelemetry not imported", _per_call(hub.active, calls)))
    request = _per_call(lambda: client.prompt("When is the beacon lit?").call().content(), 200)
    import opentelemetry.trace  # noqa: F401  # as chromadb does, without configuring a provider

    rows.append(("active(), imported, no provider set", _per_call(hub.active, calls)))
    rows.append(("ChatClient call with a store query", request))
    floor = rows[0][1]
    print(f"{'case':<40} {'per call':>12} {'x floor':>8}")
    for name, seconds in rows:
        print(f"{name:<40} {seconds * 1e9:>9.0f} ns {seconds / floor:>8.1f}")


if __name__ == "__main__":
    main()
