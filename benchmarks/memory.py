"""Latency of the SQLite chat memory: add a turn and get a 20-message window, at 1k and 100k messages.

Run: python benchmarks/memory.py [--sizes 1000 100000] [--repeat 2000]

Each conversation holds a full window (20 messages: a system message and alternating user/assistant
turns of ~40 words). `get` reads one random conversation's window; `add` appends one user + assistant turn
through MessageWindowChatMemory, which evicts the two oldest (one atomic write). Target: get < 2 ms at 100k.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

from rag.chat import AssistantMessage, Message, SystemMessage, UserMessage
from rag.memory import MessageWindowChatMemory, SQLiteChatMemoryRepository

WINDOW = 20
_WORDS = ["the", "keeper", "logs", "fog", "signals", "in", "the", "ledger", "while", "tides", "flood"]


def _text(rng: random.Random, n: int = 40) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(n))


def _conversation(rng: random.Random) -> list[Message]:
    messages: list[Message] = [SystemMessage("You answer questions about the lighthouse.")]
    for i in range(WINDOW - 1):
        messages.append(
            UserMessage(_text(rng)) if i % 2 == 0 else AssistantMessage(_text(rng), metadata={"id": "x"})
        )
    return messages


def _fill(repo: SQLiteChatMemoryRepository, total: int, rng: random.Random) -> list[str]:
    ids = [f"conversation-{i:07d}" for i in range(total // WINDOW)]
    for cid in ids:
        repo.save_all(cid, _conversation(rng))
    return ids


def _percentiles(samples: list[float]) -> tuple[float, float, float]:
    ordered = sorted(samples)
    p95 = ordered[int(0.95 * (len(ordered) - 1))]
    return statistics.median(ordered) * 1e3, p95 * 1e3, statistics.fmean(ordered) * 1e3


def _measure(size: int, repeat: int, folder: Path) -> list[tuple[str, int, tuple[float, float, float]]]:
    rng = random.Random(size)
    repo = SQLiteChatMemoryRepository(folder / f"memory-{size}.sqlite")
    start = time.perf_counter()
    ids = _fill(repo, size, rng)
    fill = time.perf_counter() - start
    print(f"filled {repo.count_messages():,} messages in {len(ids):,} conversations in {fill:.1f} s")
    memory = MessageWindowChatMemory(repo, max_messages=WINDOW)
    gets, adds = [], []
    for _ in range(repeat):
        cid = rng.choice(ids)
        t0 = time.perf_counter()
        window = memory.get(cid)
        gets.append(time.perf_counter() - t0)
        assert len(window) == WINDOW
    turn: list[Message] = [UserMessage(_text(rng)), AssistantMessage(_text(rng))]
    for _ in range(repeat):
        cid = rng.choice(ids)
        t0 = time.perf_counter()
        memory.add(cid, turn)
        adds.append(time.perf_counter() - t0)
    repo.close()
    return [
        ("get 20-message window", size, _percentiles(gets)),
        ("add one turn (2 messages)", size, _percentiles(adds)),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 100_000])
    parser.add_argument("--repeat", type=int, default=2_000)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for size in args.sizes:
            rows.extend(_measure(size, args.repeat, Path(folder)))
    print(f"\n{'operation':<28}{'stored':>10}{'median ms':>12}{'p95 ms':>10}{'mean ms':>10}")
    for name, size, (median, p95, mean) in rows:
        print(f"{name:<28}{size:>10,}{median:>12.3f}{p95:>10.3f}{mean:>10.3f}")
    at_100k = [median for name, size, (median, _, _) in rows if name.startswith("get") and size >= 100_000]
    if at_100k:
        verdict = "meets" if max(at_100k) < 2.0 else "misses"
        print(f"\nget at >= 100k: median {max(at_100k):.3f} ms ({verdict} the 2 ms target)")


if __name__ == "__main__":
    main()
