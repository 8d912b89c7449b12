"""The notebooks run top to bottom in a real IPython kernel from the repository root; no stored outputs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def _kernel_manager(folder: Path) -> KernelManager:
    """A kernel running this very interpreter, whatever kernelspecs the machine has (or lacks).

    A fresh virtualenv may have no `python3` kernelspec, and a user-level one may point at another Python;
    a private spec in a temporary folder sidesteps both.
    """
    spec = folder / "kernels" / "rag-test-python"
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(
        json.dumps({"argv": argv, "display_name": "rag test kernel", "language": "python"}), encoding="utf-8"
    )
    specs = KernelSpecManager(kernel_dirs=[str(folder / "kernels")], ensure_native_kernel=False)
    return KernelManager(kernel_name="rag-test-python", kernel_spec_manager=specs)


def test_both_notebooks_exist() -> None:
    assert [p.name for p in NOTEBOOKS] == ["01_explore_retrieval.ipynb", "02_evaluate_settings.ipynb"]


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_without_stored_outputs(path: Path, tmp_path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)  # type: ignore[no-untyped-call]
    code_cells = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert code_cells and all(not cell.outputs and cell.execution_count is None for cell in code_cells)
    client = NotebookClient(
        notebook,
        km=_kernel_manager(tmp_path),
        timeout=120,
        resources={"metadata": {"path": str(ROOT)}},  # the kernel's working directory: data/ is found from it
    )
    # nbclient keeps a kernel it did not create running unless told: stop it and close the client's sockets.
    client.execute(cleanup_kc=True)
    errors = [out for cell in code_cells for out in cell.outputs if out.output_type == "error"]
    assert not errors
    # Every code cell ran, and the plots rendered as images.
    assert all(cell.execution_count for cell in code_cells)
    images = [out for cell in code_cells for out in cell.outputs if "image/png" in out.get("data", {})]
    assert images
