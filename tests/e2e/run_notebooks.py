"""Execute the notebooks in a private kernel of this interpreter; `python -m tests.e2e.run_notebooks`
re-executes them in place, which is how their committed outputs are refreshed.

The outputs are deterministic (fixed data, the hashing embedder, no timings or temporary paths printed),
so executing twice gives the same text, and the test suite checks the committed text is still what the
code prints.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import nbformat
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
KERNEL = "python3"  # the name recorded in the notebooks; the spec behind it is written here


def _kernel_manager(folder: Path) -> KernelManager:
    """A kernel running this very interpreter, whatever kernelspecs the machine has (or lacks).

    A fresh virtualenv may have no `python3` kernelspec, and a user-level one may point at another Python;
    a private spec in a temporary folder sidesteps both.
    """
    spec = folder / "kernels" / KERNEL
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(
        json.dumps({"argv": argv, "display_name": "Python 3", "language": "python"}), encoding="utf-8"
    )
    specs = KernelSpecManager(kernel_dirs=[str(folder / "kernels")], ensure_native_kernel=False)
    return KernelManager(kernel_name=KERNEL, kernel_spec_manager=specs)


def execute(path: Path, scratch: Path) -> Any:
    """The notebook at `path`, executed from the repository root (where data/ is), without timings."""
    notebook = nbformat.read(path, as_version=4)  # type: ignore[no-untyped-call]
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
            cell.metadata.pop("execution", None)
    client = NotebookClient(
        notebook,
        km=_kernel_manager(scratch),
        timeout=300,
        record_timing=False,  # wall-clock stamps would change the file on every run
        coalesce_streams=True,  # one cell's prints arrive in one message or several, as timing has it
        resources={"metadata": {"path": str(ROOT)}},
    )
    # nbclient keeps a kernel it did not create running unless told: stop it and close the client's sockets.
    client.execute(cleanup_kc=True)
    return notebook


def main() -> None:
    """Re-execute every notebook and write it back with its outputs."""
    for path in NOTEBOOKS:
        with tempfile.TemporaryDirectory() as scratch:
            notebook = execute(path, Path(scratch))
        nbformat.write(notebook, path)  # type: ignore[no-untyped-call]
        print(f"executed {path.relative_to(ROOT)} ({path.stat().st_size // 1024} KiB)")


if __name__ == "__main__":
    main()
