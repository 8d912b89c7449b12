"""The home lock across real processes: a holder blocks, its death (even by SIGKILL) frees the lock."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from ingest.lock import HomeLock, HomeLockedError
from rag.errors import IngestError

_HOLD = """
import sys, time
from ingest.lock import HomeLock
lock = HomeLock(sys.argv[1])
lock.acquire()
print("held", flush=True)
sys.stdin.readline()  # hold until told to go (or killed)
"""


def _holder(path: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_a_lock_held_by_another_process_blocks_then_frees_on_sigkill(tmp_path: Path) -> None:
    path = tmp_path / "home" / "ingest.lock"
    holder = _holder(path)
    try:
        with pytest.raises(HomeLockedError, match=rf"another ingestion \(process {holder.pid}\)") as info:
            HomeLock(path, timeout_s=0).acquire()
        assert info.value.path == str(path) and isinstance(info.value, IngestError)
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
        assert holder.stdin is not None and holder.stdout is not None
        holder.stdin.close()
        holder.stdout.close()
    with HomeLock(path, timeout_s=0) as lock:  # the killed holder left nothing stale behind
        assert lock.held and path.read_text().strip() == str(os.getpid())
    assert not lock.held


def test_a_waiter_is_told_once_and_gets_the_lock_when_the_holder_ends(tmp_path: Path) -> None:
    path = tmp_path / "ingest.lock"
    holder = _holder(path)
    messages: list[str] = []

    def on_wait(message: str) -> None:
        messages.append(message)
        assert holder.stdin is not None
        holder.stdin.write("go\n")  # the holder ends only once the waiter has said it waits
        holder.stdin.close()

    with HomeLock(path, on_wait=on_wait) as lock:
        assert lock.held
    holder.wait()
    assert holder.stdout is not None
    holder.stdout.close()
    assert messages == [f"waiting for another ingestion (process {holder.pid}) to finish with this home"]
