"""Progress of a long run: events for callbacks, a one-line bar on a terminal, plain lines elsewhere.

On a terminal the bar is redrawn in place; when stderr is a file or a pipe (a CI log, `2> log`), the
same text is written as a plain line every `RAG_PROGRESS_INTERVAL` seconds (5 by default) once a run
has lasted that long, and once more when it ends, so a long run is never silent and a short one
prints nothing.

Example:
    >>> events = []
    >>> ProgressEvent("file", files_done=1, files_total=4, chunks_embedded=10, elapsed_s=0.5).fraction
    0.25
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from typing import Literal, TextIO

__all__ = ["DEFAULT_LINE_INTERVAL_S", "CountProgress", "ProgressEvent", "TerminalProgress", "line_interval"]

DEFAULT_LINE_INTERVAL_S = 5.0
"""Seconds between progress lines when stderr is not a terminal (`RAG_PROGRESS_INTERVAL` overrides)."""


def line_interval() -> float:
    """The seconds between plain progress lines: `RAG_PROGRESS_INTERVAL`, else the default.

    Raises:
        ConfigError: the variable is not a number >= 0.
    """
    raw = os.environ.get("RAG_PROGRESS_INTERVAL")
    if raw is None or not raw.strip():
        return DEFAULT_LINE_INTERVAL_S
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value >= 0:  # also NaN
        from rag.errors import ConfigError

        raise ConfigError(f"RAG_PROGRESS_INTERVAL must be a number of seconds >= 0, got {raw!r}")
    return value


class _Writer:
    """Redraws one line on a terminal; elsewhere writes plain lines, spaced by `line_interval_s`."""

    def __init__(self, stream: TextIO | None, interval_s: float, line_interval_s: float | None) -> None:
        self.stream = sys.stderr if stream is None else stream
        self.terminal = bool(getattr(self.stream, "isatty", lambda: False)())
        self.interval_s = (
            interval_s if self.terminal else (line_interval() if line_interval_s is None else line_interval_s)
        )
        self._started = time.monotonic()
        self._last: float | None = None
        self._text = ""
        self._width = 0

    def write(self, text: str, final: bool) -> None:
        now = time.monotonic()
        if self.terminal:
            if not final and self._last is not None and now - self._last < self.interval_s:
                return
            pad = " " * max(0, self._width - len(text))
            self._width = len(text)
            self.stream.write("\r" + text + pad + ("\n" if final else ""))
        else:
            if final and text == self._text:
                return  # the last line already says it
            since = now - (self._started if self._last is None else self._last)
            # A short run prints nothing; a long one a line per interval and its last state.
            if not (final and self._last is not None) and since < self.interval_s:
                return
            self.stream.write(text + "\n")
        self._last, self._text = now, text
        self.stream.flush()


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
    """Ingest progress on stderr (by default): a bar redrawn at most ten times a second on a terminal,
    plain lines every few seconds elsewhere (see the module docstring).

    Pass it as `on_progress`.

    Example:
        >>> import io
        >>> log = io.StringIO()
        >>> bar = TerminalProgress(log, line_interval_s=0)
        >>> bar(ProgressEvent("file", files_done=1, files_total=2, chunks_embedded=3, elapsed_s=1.0))
        >>> log.getvalue()
        'ingest: [##########..........] 1/2 files  3 chunks  3 chunks/s  ETA 0:01\\n'
    """

    def __init__(
        self, stream: TextIO | None = None, *, interval_s: float = 0.1, line_interval_s: float | None = None
    ) -> None:
        self._writer = _Writer(stream, interval_s, line_interval_s)
        self.stream = self._writer.stream

    def render(self, event: ProgressEvent) -> str:
        """The bar's text for an event."""
        filled = int(20 * event.fraction)
        rate = event.chunks_embedded / event.elapsed_s if event.elapsed_s > 0 else 0.0
        return (
            f"[{'#' * filled}{'.' * (20 - filled)}] {event.files_done}/{event.files_total} files  "
            f"{event.chunks_embedded} chunks  {rate:,.0f} chunks/s  ETA {_clock(event.eta_s)}"
        )

    def __call__(self, event: ProgressEvent) -> None:
        text = self.render(event)
        self._writer.write(text if self._writer.terminal else f"ingest: {text}", event.phase == "done")


class CountProgress:
    """Progress of `total` steps of one kind (`rag eval`'s searches): `advance()` after each, `close()`
    at the end; drawn like `TerminalProgress`.

    Example:
        >>> import io
        >>> log = io.StringIO()
        >>> progress = CountProgress("eval", "searches", 4, log, line_interval_s=0)
        >>> progress.advance(); progress.close()
        >>> log.getvalue().splitlines()[0]
        'eval: 1/4 searches (25%)'
    """

    def __init__(
        self,
        label: str,
        unit: str,
        total: int,
        stream: TextIO | None = None,
        *,
        line_interval_s: float | None = None,
    ) -> None:
        self.label, self.unit, self.total, self.done = label, unit, total, 0
        self._writer = _Writer(stream, 0.1, line_interval_s)

    def _text(self) -> str:
        share = f" ({100 * self.done // self.total}%)" if self.total else ""
        return f"{self.label}: {self.done}/{self.total} {self.unit}{share}"

    def advance(self, steps: int = 1) -> None:
        self.done += steps
        self._writer.write(self._text(), final=False)

    def close(self) -> None:
        """Draw the last state (a final line only if a line was drawn before, off a terminal)."""
        self._writer.write(self._text(), final=True)
