"""The order in which `--dist loadfile` hands test files to the workers: slow files first.

xdist hands out files by their number of tests, most first. That leaves to the end the files with a few
tests that each start processes, servers or models and run for tens of seconds: one worker runs them while
the others have nothing left to do. Handing the slow files out first (in xdist's order among them), and the
many quick in-process files after them, lets the workers finish together.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from xdist.scheduler import LoadFileScheduling

__all__ = ["SlowFilesFirst"]


class SlowFilesFirst(LoadFileScheduling):  # type: ignore[misc]
    """xdist's file scheduling, with the files `is_slow` picks handed out before the others."""

    def __init__(self, config: pytest.Config, log: Any, *, is_slow: Callable[[Path], bool]) -> None:
        super().__init__(config, log)
        self._is_slow = is_slow
        self._ordered = False

    def _assign_work_unit(self, node: Any) -> None:
        if not self._ordered:  # the queue is complete when the first file is handed out
            self._ordered = True
            root = Path(self.config.rootpath)
            queue = sorted(self.workqueue.items(), key=lambda item: not self._is_slow(root / item[0]))
            self.workqueue.clear()
            self.workqueue.update(queue)
        super()._assign_work_unit(node)
