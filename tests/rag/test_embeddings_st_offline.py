"""A Hub model name without the network fails fast, saying how to use a local folder.

Each case runs in a fresh interpreter, because huggingface_hub reads HF_HUB_OFFLINE and HF_ENDPOINT
when it is imported. Nothing here reaches the network: either the offline switch is set, or the Hub
endpoint is a closed loopback port.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.rag.tiny_bert import build_tiny_bert

ROOT = Path(__file__).resolve().parents[2]
UNKNOWN = "rag-tests-no-such-model"
# The child imports sentence-transformers first (slow on a loaded machine), then reports how long the
# load itself took on its second output line.
_LOAD = (
    "import sys, time\n"
    "import sentence_transformers\n"
    "from rag.embeddings import SentenceTransformerEmbedding\n"
    "from rag.errors import EmbeddingError\n"
    "started = time.monotonic()\n"
    "try:\n"
    "    print(SentenceTransformerEmbedding(sys.argv[1], cache_folder=sys.argv[2]).dimensions)\n"
    "except EmbeddingError as exc:\n"
    "    print(f'EmbeddingError: {exc}')\n"
    "print(time.monotonic() - started)\n"
)
# The load alone: far above the second or so it takes, far below the 70+ s of huggingface_hub's retries.
GENEROUS_SECONDS = 45.0


def _closed_port_url() -> str:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def _load(name: str, cache: Path, **env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    clean.update(env, PYTHONPATH=str(ROOT))
    result = subprocess.run(
        [sys.executable, "-c", _LOAD, name, str(cache)],
        capture_output=True,
        text=True,
        env=clean,
        timeout=240,
        check=True,
    )
    answer, seconds = result.stdout.strip().rsplit("\n", 1)
    assert float(seconds) < GENEROUS_SECONDS, result.stderr
    return answer


def test_offline_setting_fails_at_once_naming_a_local_folder(tmp_path: Path) -> None:
    message = _load(UNKNOWN, tmp_path, HF_HUB_OFFLINE="1")
    assert message == (
        f"EmbeddingError: sentence-transformers model {UNKNOWN!r} is not in {tmp_path!s} and "
        "HF_HUB_OFFLINE is set; download it once while online, or use a local folder: "
        "--embedder st:/path/to/model"
    )


def test_unreachable_hub_fails_at_once_naming_a_local_folder(tmp_path: Path) -> None:
    endpoint = _closed_port_url()
    message = _load(UNKNOWN, tmp_path, HF_ENDPOINT=endpoint)
    assert message.startswith(
        f"EmbeddingError: sentence-transformers model {UNKNOWN!r} is not in {tmp_path!s} and "
        f"{endpoint} cannot be reached ("
    )
    assert message.endswith(
        "; download it once while online, or use a local folder: --embedder st:/path/to/model"
    )


@pytest.mark.slow
def test_a_cached_hub_model_loads_offline(tmp_path: Path) -> None:
    # The Hub cache's own layout: models--ORG--NAME/refs/main names a snapshot folder holding the files.
    repo = tmp_path / "cache" / "models--rag-tests--tiny-bert"
    shutil.copytree(build_tiny_bert(tmp_path / "built"), repo / "snapshots" / "0123abcd")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0123abcd", encoding="utf-8")
    assert _load("rag-tests/tiny-bert", tmp_path / "cache", HF_HUB_OFFLINE="1") == "32"
    assert _load("rag-tests/tiny-bert", tmp_path / "cache", HF_ENDPOINT=_closed_port_url()) == "32"
