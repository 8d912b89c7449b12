"""A Hub model name without the network fails fast, saying how to use a local folder.

huggingface_hub reads HF_HUB_OFFLINE and HF_ENDPOINT when it is imported, so each way of being offline runs
in a fresh interpreter started with that setting: one with the offline switch set, one whose Hub endpoint
is a closed loopback port. Each interpreter loads a name that is not cached, then a name that is (the
two interpreters run side by side, once for the module). Nothing here reaches the network.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest

from tests.rag.tiny_bert import build_tiny_bert

ROOT = Path(__file__).resolve().parents[2]
UNKNOWN = "rag-tests-no-such-model"
CACHED = "rag-tests/tiny-bert"
# The child imports sentence-transformers first (slow on a loaded machine), then loads each name given as
# (name, cache folder) and prints, per load, the answer and how long the load itself took.
_LOAD = (
    "import json, sys, time\n"
    "import sentence_transformers\n"
    "from rag.embeddings import SentenceTransformerEmbedding\n"
    "from rag.errors import EmbeddingError\n"
    "answers = []\n"
    "for name, cache in json.loads(sys.argv[1]):\n"
    "    started = time.monotonic()\n"
    "    try:\n"
    "        answer = str(SentenceTransformerEmbedding(name, cache_folder=cache).dimensions)\n"
    "    except EmbeddingError as exc:\n"
    "        answer = f'EmbeddingError: {exc}'\n"
    "    answers.append([answer, time.monotonic() - started])\n"
    "print(json.dumps(answers))\n"
)
# The load alone: far above the second or so it takes, far below the 70+ s of huggingface_hub's retries.
GENEROUS_SECONDS = 45.0


def _closed_port_url() -> str:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def _start(loads: list[tuple[str, Path]], **env: str) -> subprocess.Popen[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    clean.update(env, PYTHONPATH=str(ROOT))
    argument = json.dumps([[name, str(cache)] for name, cache in loads])
    return subprocess.Popen(
        [sys.executable, "-c", _LOAD, argument],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=clean,
    )


def _answers(child: subprocess.Popen[str]) -> tuple[str, str]:
    out, err = child.communicate(timeout=240)
    assert child.returncode == 0, err
    loads = json.loads(out)
    assert all(seconds < GENEROUS_SECONDS for _, seconds in loads), (loads, err)
    (unknown, _), (cached, _) = loads
    return unknown, cached


class Offline(NamedTuple):
    """One interpreter's answers: UNKNOWN loaded from the `empty` cache folder, then CACHED from a cache
    that holds it."""

    empty: Path
    endpoint: str
    unknown: str
    cached: str


@pytest.fixture(scope="module")
def offline(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Offline]:
    """The answers with the offline switch set ("switch"), and with the Hub endpoint at a closed port
    ("closed")."""
    base = tmp_path_factory.mktemp("st-offline")
    # The Hub cache's own layout: models--ORG--NAME/refs/main names a snapshot folder holding the files.
    cache = base / "cache"
    repo = cache / "models--rag-tests--tiny-bert"
    shutil.copytree(build_tiny_bert(base / "built"), repo / "snapshots" / "0123abcd")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0123abcd", encoding="utf-8")
    empty = {setting: base / f"empty-{setting}" for setting in ("switch", "closed")}
    endpoint = {"switch": "", "closed": _closed_port_url()}
    children = {
        "switch": _start([(UNKNOWN, empty["switch"]), (CACHED, cache)], HF_HUB_OFFLINE="1"),
        "closed": _start([(UNKNOWN, empty["closed"]), (CACHED, cache)], HF_ENDPOINT=endpoint["closed"]),
    }
    return {
        setting: Offline(empty[setting], endpoint[setting], *_answers(child))
        for setting, child in children.items()
    }


def test_offline_setting_fails_at_once_naming_a_local_folder(offline: dict[str, Offline]) -> None:
    assert offline["switch"].unknown == (
        f"EmbeddingError: sentence-transformers model {UNKNOWN!r} is not in {offline['switch'].empty!s} and "
        "HF_HUB_OFFLINE is set; download it once while online, or use a local folder: "
        "--embedder st:/path/to/model"
    )


def test_unreachable_hub_fails_at_once_naming_a_local_folder(offline: dict[str, Offline]) -> None:
    message = offline["closed"].unknown
    assert message.startswith(
        f"EmbeddingError: sentence-transformers model {UNKNOWN!r} is not in {offline['closed'].empty!s} and "
        f"{offline['closed'].endpoint} cannot be reached ("
    )
    assert message.endswith(
        "; download it once while online, or use a local folder: --embedder st:/path/to/model"
    )


@pytest.mark.slow
def test_a_cached_hub_model_loads_offline(offline: dict[str, Offline]) -> None:
    assert offline["switch"].cached == "32" and offline["closed"].cached == "32"
