"""A missing extra stops a command before its work: exit 1 and the pip line (issue 18, item 4)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from click.testing import Result

DATA = Path(__file__).resolve().parents[2] / "data"
ROOT = DATA.parent
# A None entry in sys.modules makes `import matplotlib` raise ImportError, as on a machine without it.
_WITHOUT_MATPLOTLIB = (
    "import sys\n"
    "sys.modules['matplotlib'] = None\n"
    "from rag.cli import main\n"
    "main(sys.argv[1:], prog_name='rag')\n"
)


def test_eval_plot_without_matplotlib_fails_first_with_the_install_line(
    cli: Callable[..., Result], docs: Path, rag_home: Path, tmp_path: Path
) -> None:
    assert cli("ingest", docs, "--store", "numpy").exit_code == 0
    questions = tmp_path / "questions.jsonl"
    row = {"question": "Who logs fog signals?", "relevant": [{"source": "keepers.txt"}]}
    questions.write_text(json.dumps(row) + "\n", "utf-8")
    png = tmp_path / "eval.png"
    env = {**os.environ, "RAG_HOME": str(rag_home), "PYTHONPATH": str(ROOT)}
    args = ["eval", str(questions), "--store", "numpy", "--top-k", "1", "--plot", str(png)]
    result = subprocess.run(
        [sys.executable, "-c", _WITHOUT_MATPLOTLIB, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert result.returncode == 1, result.stderr
    assert result.stderr.strip().splitlines() == [
        'error: --plot needs matplotlib, which is not installed: pip install "rag-advisors[notebooks]"'
    ]
    assert result.stdout == "" and not png.exists()  # no table printed: the evaluation never ran
    # The same command with matplotlib importable does the work and draws the plot.
    with_it = _WITHOUT_MATPLOTLIB.replace("sys.modules['matplotlib'] = None\n", "")
    ok = subprocess.run(
        [sys.executable, "-c", with_it, *args], capture_output=True, text=True, env=env, timeout=120
    )
    assert ok.returncode == 0, ok.stderr
    assert "ndcg" in ok.stdout and png.read_bytes()[:4] == b"\x89PNG"
