"""Excel workbooks (`.xlsx`) through openpyxl: one unit per sheet, named by the sheet.

- Each sheet's unit carries `sheet` (its name), which citations show (`budget.xlsx, sheet Costs`), and
  `section`, the same name. A row is its non-empty cells joined by tabs (the values Excel last
  computed for formulas); empty rows are left out. Sheets are read streaming (read-only mode).
- `title` is the workbook's core property `title` when set.

Example:
    >>> # read_xlsx(Path("b.xlsx").read_bytes(), "b.xlsx", ReaderOptions()).units[0].metadata["sheet"]
"""

from __future__ import annotations

import io
from typing import Any

from ingest.readers.base import MetadataValue, ReaderOptions, ReadResult
from ingest.readers.office.archive import UnitBuilder, missing_extra, open_archive

__all__ = ["read_xlsx"]


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return " ".join(str(value).split())


def read_xlsx(data: bytes, source: str, options: ReaderOptions) -> ReadResult:
    """An Excel workbook as one unit per sheet (see the module docstring)."""
    del options  # no option changes workbooks
    open_archive(data, source, "Excel")
    try:
        import openpyxl
    except ImportError as exc:
        raise missing_extra(source, ".xlsx", exc) from exc
    workbook = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    try:
        title = " ".join((workbook.properties.title or "").split()) or None
        base: dict[str, MetadataValue] = {"source": source}
        if title:
            base["title"] = title
        builder = UnitBuilder(base)
        for sheet in workbook.worksheets:
            builder.cut(sheet=sheet.title)
            builder.heading(1, sheet.title)
            for row in sheet.iter_rows(values_only=True):
                builder.add("\t".join(text for text in map(_cell, row) if text))
        return builder.result()
    finally:
        workbook.close()
