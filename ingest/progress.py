"""Progress of an ingestion run: events for callbacks, and a one-line bar for terminals.

Example:
    >>> events = []
    >>> ProgressEvent("file", files_done=1, files_total=4, chunks_embedded=10, elapsed_s=0.5).fraction
    0.25
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import Literal, TextIO

__all__ = ["ProgressEvent", "TerminalProgress"]

Phase = Literal["start", "file", "write", "prune", "done"]


@dataclass(frozen=True)
class ProgressEvent:
    """A step of a run. `phase` is `start`, `file` (a file examined), `write` (a batch stored),
    `prune` (deleted files removed) or `done`.

    Example:
        >>> def on_progress(event: ProgressEvent) -> None:
        ...     if event.phase == "done":
        ...         print(event.files_done, "files")
    """

    phase: Phase
    files_done: int = 0
    files_total: int = 0
    chunks_embedded: int = 0
    elapsed_s: float = 0.0
    source: str | None = None

    @property
    def fraction(self) -> float:
        """Files done over files found (1.0 when there are none)."""
        return 1.0 if self.files_total == 0 else self.files_done / self.files_total

    @property
    def eta_s(self) -> float | None:
        """Seconds left at the current file rate, or None before the first file."""
        if self.files_done == 0 or self.elapsed_s <= 0:
            return None
        return (self.files_total - self.files_done) * self.elapsed_s / self.files_done


def _clock(seconds: float | None) -> str:
    if seconds is None:
        return "--:--"
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes // 60}:{minutes % 60:02d}:{secs:02d}" if minutes >= 60 else f"{minutes:d}:{secs:02d}"


class TerminalProgress:
    """A progress line on a terminal (stderr by default), redrawn at most ten times a second.

    Pass it as `on_progress`; it draws nothing unless the stream is a terminal.

    Example:
        >>> bar = TerminalProgress()
        >>> bar(ProgressEvent("done"))  # silent when stderr is not a terminal
    """

    def __init__(self, stream: TextIO | None = None, *, interval_s: float = 0.1) -> None:
        self.stream = sys.stderr if stream is None else stream
        self.enabled = bool(getattr(self.stream, "isatty", lambda: False)())
        self.interval_s = interval_s
        self._last = 0.0
        self._width = 0

    def render(self, event: ProgressEvent) -> str:
        """The bar's text for an event."""
        filled = int(20 * event.fraction)
        rate = event.chunks_embedded / event.elapsed_s if event.elapsed_s > 0 else 0.0
        return (
            f"[{'#' * filled}{'.' * (20 - filled)}] {event.files_done}/{event.files_total} files  "
            f"{event.chunks_embedded} chunks  {rate:,.0f} chunks/s  ETA {_clock(event.eta_s)}"
        )

    def __call__(self, event: ProgressEvent) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if event.phase != "done" and now - self._last < self.interval_s:
            return
        self._last = now
        text = self.render(event)
        pad = " " * max(0, self._width - len(text))
        self._width = len(text)
        self.stream.write("\r" + text + pad)
        if event.phase == "done":
            self.stream.write("\n")
        self.stream.flush()
