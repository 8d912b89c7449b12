"""A closed output pipe ends a command quietly (`rag info | head -2`), as Unix tools do."""

from __future__ import annotations

import os
import sys

__all__ = ["quiet_broken_pipe"]


def quiet_broken_pipe() -> None:
    """Point stdout at the null device, so nothing more goes to the closed pipe: not even the
    interpreter's last flush, which would otherwise print a `BrokenPipeError` on the way out."""
    try:
        target = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return  # not a real file (a test runner's buffer): nothing will flush to a pipe
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, target)
    finally:
        os.close(devnull)
