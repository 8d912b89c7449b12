"""What every office reader shares: a size-checked zip archive and a builder of sectioned units.

Office files are zip archives. `open_archive` refuses one whose members would unpack to more than
`MAX_UNPACKED` bytes or that holds too many members (a zip bomb), before any library reads it, so a
small hostile file cannot take the run's memory. `UnitBuilder` gathers text blocks under a heading path
into units whose offsets count in one extracted text, as the other readers' units do.

Example:
    >>> builder = UnitBuilder({"source": "a.docx"})
    >>> builder.heading(1, "Install")
    >>> builder.add("Run the installer.")
    >>> [(u.text, u.metadata["section"]) for u in builder.result().units]
    [('Install\\n\\nRun the installer.', 'Install')]
"""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass, field

from ingest.readers.base import MetadataValue, ReadResult, Unit
from ingest.readers.text import make_unit
from rag.errors import IngestError

__all__ = ["MAX_MEMBERS", "MAX_UNPACKED", "UnitBuilder", "missing_extra", "open_archive"]

MAX_UNPACKED = 512 * 1024 * 1024
"""The most bytes an office file's members may unpack to."""

MAX_MEMBERS = 20_000
"""The most members an office archive may hold."""


def open_archive(data: bytes, source: str, kind: str) -> zipfile.ZipFile:
    """`data` as a zip archive, checked against `MAX_UNPACKED` and `MAX_MEMBERS`.

    Raises:
        IngestError: not a zip archive (a damaged file), or one that unpacks too far.
    """
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise IngestError(f"damaged {kind} file {source!r}: not a zip archive ({exc})", path=source) from exc
    members = archive.infolist()
    if len(members) > MAX_MEMBERS:
        raise IngestError(
            f"{source!r} holds {len(members):,} archive members (at most {MAX_MEMBERS:,})", path=source
        )
    unpacked = sum(member.file_size for member in members)
    if unpacked > MAX_UNPACKED:
        raise IngestError(
            f"{source!r} would unpack to {unpacked:,} bytes (at most {MAX_UNPACKED:,}); not read", path=source
        )
    return archive


def missing_extra(source: str, suffix: str, exc: ImportError) -> IngestError:
    """The per-file error for an office file read without the `office` extra installed."""
    return IngestError(
        f'cannot read {source!r}: {suffix} files need the office extra: pip install "rag-advisors[office]" '
        f"({exc.name or exc})",
        path=source,
    )


@dataclass
class UnitBuilder:
    """Text blocks in reading order, grouped into one unit per section (a heading and what follows it).

    `heading(level, title)` closes the current section and opens one whose `section` metadata is the path
    of the headings above it (`"Install > From source"`, as Markdown's units have), `add(text)` adds a
    block to the current section, and `cut(**metadata)` closes it without a heading (a new slide or sheet).
    """

    base: dict[str, MetadataValue]
    units: list[Unit] = field(default_factory=list)
    _parts: list[str] = field(default_factory=list)
    _title: str | None = None
    _blocks: list[str] = field(default_factory=list)
    _path: list[tuple[int, str]] = field(default_factory=list)
    _place: dict[str, MetadataValue] = field(default_factory=dict)
    _offset: int = 0

    def add(self, text: str) -> None:
        """Add a block of text (a paragraph, a table row) to the current section; blank text is ignored."""
        if text.strip():
            self._blocks.append(text.strip())

    def heading(self, level: int, title: str) -> None:
        """Close the current section and start one under the heading `title` at `level` (1 = top)."""
        self._close()
        while self._path and self._path[-1][0] >= level:
            self._path.pop()
        title = " ".join(title.split())
        if title:
            self._path.append((level, title))
            self._title = title

    def cut(self, **place: MetadataValue) -> None:
        """Close the current section; the next ones carry `place` (`slide=3`, `sheet="Budget"`)."""
        self._close()
        self._path.clear()
        self._place = dict(place)

    def _close(self) -> None:
        # A section holding nothing but its heading gives no unit: its title lives on in its children's paths.
        blocks, title = self._blocks, self._title
        self._blocks, self._title = [], None
        if not blocks:
            return
        text = "\n\n".join([title, *blocks] if title else blocks)
        names = [title for _, title in self._path]
        metadata: dict[str, object] = {
            **self.base,
            **self._place,
            "section": " > ".join(names) or None,
            "headings": names or None,
        }
        unit = make_unit(text, self._offset, metadata)
        if unit is not None:
            self.units.append(unit)
        self._parts.append(text)
        self._offset += len(text) + 2

    def result(self, warnings: list[str] | None = None, *, title: str | None = None) -> ReadResult:
        """The units gathered (each titled `title` when given), with the text their offsets count in."""
        self._close()
        units = self.units
        if title:
            units = [Unit(u.text, {**u.metadata, "title": title}, u.char_offset) for u in units]
        return ReadResult(units, warnings=list(warnings or []), text="\n\n".join(self._parts))
