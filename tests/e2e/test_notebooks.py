"""The notebooks are committed executed (outputs and plots visible on a forge) and re-run to the same text.

Refresh the committed outputs after a change with `python -m tests.e2e.run_notebooks`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
import pytest

from tests.e2e.run_notebooks import NOTEBOOKS, execute

_REFRESH = "re-execute with `python -m tests.e2e.run_notebooks` and commit the notebooks"
_MAX_BYTES = 400_000  # outputs included: small enough to read on a forge and to keep in git


def _code_cells(notebook: Any) -> list[Any]:
    return [cell for cell in notebook.cells if cell.cell_type == "code"]


def _texts(cell: Any) -> list[str]:
    """What a reader sees of a cell's outputs as text (images stand in by their type)."""
    seen = []
    for out in cell.outputs:
        if out.output_type == "stream":
            seen.append(f"{out.name}: {out.text}")
        elif out.output_type == "error":
            seen.append(f"error: {out.ename}: {out.evalue}")
        else:
            data = out.get("data", {})
            seen.extend(f"{kind}: {data[kind]}" for kind in ("text/plain", "text/html") if kind in data)
            seen.extend(kind for kind in data if kind.startswith("image/"))
    return seen


def test_both_notebooks_exist() -> None:
    assert [p.name for p in NOTEBOOKS] == ["01_explore_retrieval.ipynb", "02_evaluate_settings.ipynb"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_committed_with_outputs_and_plots(path: Path) -> None:
    assert path.stat().st_size < _MAX_BYTES
    cells = _code_cells(nbformat.read(path, as_version=4))  # type: ignore[no-untyped-call]
    counts = [cell.execution_count for cell in cells]
    assert counts == list(range(1, len(cells) + 1)), f"not executed top to bottom; {_REFRESH}"
    texts = [text for cell in cells for text in _texts(cell)]
    assert not [t for t in texts if t.startswith("error")] and "image/png" in texts
    assert not [t for t in texts if "/tmp/" in t or "rag-notebook-" in t], "a temporary path in the outputs"
    assert all("execution" not in cell.metadata for cell in cells), "timings in the cell metadata"


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_reexecuted_notebook_shows_the_committed_outputs(path: Path, tmp_path: Path) -> None:
    committed = _code_cells(nbformat.read(path, as_version=4))  # type: ignore[no-untyped-call]
    fresh = _code_cells(execute(path, tmp_path))
    errors = [out for cell in fresh for out in cell.outputs if out.output_type == "error"]
    assert not errors, errors
    assert all(cell.execution_count for cell in fresh)
    assert any("image/png" in out.get("data", {}) for cell in fresh for out in cell.outputs), "no plot"
    for old, new in zip(committed, fresh, strict=True):
        assert _texts(new) == _texts(old), f"outputs changed in cell {old.source[:60]!r}: {_REFRESH}"
