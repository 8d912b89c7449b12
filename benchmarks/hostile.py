"""Hostile inputs through `rag ingest`: peak memory and time for huge files and PDFs that decompress forever.

Each case runs `rag ingest FILE --store numpy --embedder hashing` in a child process of its own, with a
fresh home; its peak RSS is the child's own (`os.wait4`), its time the wall time. "index MB" is the size of
the numpy store's folder afterwards (vectors, texts and the BM25 index: the engine's own index), and
"open RSS" the peak RSS of `rag query` opening that store in a fresh process (the interpreter, the
imports and the engine's index in memory). "over" is the ingest's peak minus that (minus `rag --help`'s
when nothing was stored): what reading, splitting and embedding one file cost beyond the index.

Cases:
- `text-line`: a single-line text file (default 200 MB); `jsonl-line`: a JSON Lines file of one record
  on one line (50 MB); `markdown`: a Markdown file of many sections (400 MB). At the default limits these
  are refused before they are read; `--at-limit` adds each kind at the default `--max-file-size` so the
  cost of a file that is read is measured too.
- `pdf-316k`, `pdf-23k`: 2,000 (resp. 130) pages all drawing one compressed content stream of 800 KB,
  read with the default budgets (`--pdf-timeout`, `--pdf-max-content`).

Targets: peak RSS <= 300 MB plus the engine's own index for any single input file ("over" <= 300 -
the interpreter's floor); every hostile PDF
ends within its budget (time budget + process start).

Usage:
    python benchmarks/hostile.py [--scale 1.0] [--at-limit] [--only text-line,pdf-23k] [--work DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

# This folder holds `ingest.py`, named like the `ingest` package: drop it from the path.
_HERE = Path(__file__).resolve().parent
ROOT = _HERE.parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(ROOT))

from ingest.readers.base import DEFAULT_MAX_FILE_SIZE, DEFAULT_PDF_MAX_CONTENT, DEFAULT_PDF_TIMEOUT, MB  # noqa: E402
from tests.ingest.pdfs import shared_stream_pdf  # noqa: E402

_MAIN = "import sys\nfrom rag.cli import main\nmain(sys.argv[1:], prog_name='rag')\n"
_WORDS = ["keeper", "lamp", "harbour", "tide", "fog", "signal", "beacon", "ledger", "brass", "tower"]


def _write_repeated(
    path: Path, size: int, piece: Callable[[int], bytes], head: bytes = b"", tail: bytes = b""
) -> None:
    """Write `head`, then `piece(0)`, `piece(1)`, ... up to about `size` bytes, then `tail`."""
    with path.open("wb") as out:
        out.write(head)
        written, i, buffer = 0, 0, bytearray()
        while written < size:
            chunk = piece(i)
            buffer += chunk
            written += len(chunk)
            i += 1
            if len(buffer) >= MB:
                out.write(buffer)
                buffer.clear()
        out.write(buffer + tail)


def _words(i: int) -> bytes:
    return f"{_WORDS[i % len(_WORDS)]}{i % 997} ".encode()


def text_line(path: Path, size: int) -> None:
    """One line of words, no newline."""
    _write_repeated(path, size, _words)


def jsonl_line(path: Path, size: int) -> None:
    """One JSON record on one line whose text field holds `size` bytes of words."""
    _write_repeated(path, size, _words, head=b'{"id": "huge", "text": "', tail=b'"}\n')


def markdown(path: Path, size: int) -> None:
    """Sections of a heading and a paragraph of about 2 KB each."""
    paragraph = b"".join(_words(i) for i in range(250))

    def section(i: int) -> bytes:
        return b"## Section %d\n\n" % i + paragraph + b"\n\n"

    _write_repeated(path, size, section, head=b"# Manual\n\n")


def _run_measured(args: list[str], home: Path) -> tuple[int, float, float, str]:
    """Run `rag ARGS` in a child; (exit code, seconds, peak RSS MB, why a file failed or the last
    stderr line). The child is waited for with `os.wait4`, so its peak RSS is its own."""
    import subprocess

    env = {**os.environ, "RAG_HOME": str(home), "PYTHONPATH": str(ROOT)}
    for name in ("RAG_STORE", "RAG_EMBEDDER", "RAG_MAX_FILE_SIZE", "RAG_PDF_TIMEOUT", "RAG_PDF_MAX_CONTENT"):
        env.pop(name, None)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        child = subprocess.Popen([sys.executable, "-c", _MAIN, *args], env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        lines = err.read().decode("utf-8", "replace").strip().splitlines()
        out.seek(0)
        report = out.read().decode("utf-8", "replace")
    failed = [d for d in _details(report) if d.get("status") == "failed"]
    note = str(failed[0].get("reason", "")) if failed else (lines[-1] if lines else "")
    return child.returncode, seconds, usage.ru_maxrss / 1024, note


def _details(report: str) -> list[dict[str, object]]:
    try:
        return list(json.loads(report)["details"])
    except (ValueError, KeyError, TypeError):
        return []


def _folder_mb(folder: Path) -> float:
    if not folder.exists():
        return 0.0
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / MB


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scale", type=float, default=1.0, help="multiply the huge files' sizes")
    parser.add_argument("--at-limit", action="store_true", help="add each huge kind at --max-file-size")
    parser.add_argument("--only", default="", help="comma-separated case names")
    parser.add_argument("--work", type=Path, help="folder for the inputs and homes (default: a temp one)")
    options = parser.parse_args()

    work = options.work or Path(tempfile.mkdtemp(prefix="rag-hostile-"))
    work.mkdir(parents=True, exist_ok=True)
    scale = options.scale
    cases: list[tuple[str, str, Callable[[Path], object]]] = [
        ("text-line", "huge.txt", lambda p: text_line(p, int(200 * MB * scale))),
        ("jsonl-line", "huge.jsonl", lambda p: jsonl_line(p, int(50 * MB * scale))),
        ("markdown", "huge.md", lambda p: markdown(p, int(400 * MB * scale))),
        ("pdf-316k", "bomb.pdf", lambda p: p.write_bytes(shared_stream_pdf(2000, 20000))),
        ("pdf-23k", "bomb.pdf", lambda p: p.write_bytes(shared_stream_pdf(130, 20000))),
    ]
    if options.at_limit:
        limit = DEFAULT_MAX_FILE_SIZE - MB  # just under the default limit: read
        cases += [
            ("text-line@limit", "big.txt", lambda p: text_line(p, limit)),
            ("jsonl-line@limit", "big.jsonl", lambda p: jsonl_line(p, limit)),
            ("markdown@limit", "big.md", lambda p: markdown(p, limit)),
        ]
    cases.insert(0, ("tiny (floor)", "tiny.md", lambda p: p.write_text("# Tiny\n\nOne lamp.\n")))
    chosen = {name.strip() for name in options.only.split(",") if name.strip()}

    print(
        f"defaults: --max-file-size {DEFAULT_MAX_FILE_SIZE // MB} MB, "
        f"--pdf-timeout {DEFAULT_PDF_TIMEOUT:g} s, "
        f"--pdf-max-content {DEFAULT_PDF_MAX_CONTENT // MB} MB; store numpy, embedder hashing"
    )
    header = f"{'case':<18} {'file MB':>8} {'exit':>4} {'wall s':>7} {'peak RSS MB':>11} {'index MB':>8} "
    print(header + f"{'open RSS':>9} {'over':>9}  note")
    floor = _run_measured(["--help"], work)[2]
    for name, filename, build in cases:
        if chosen and name not in chosen:
            continue
        folder = work / name.replace("@", "-").replace(" ", "-").replace("(", "").replace(")", "")
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        path = folder / filename
        build(path)
        home = folder / "home"
        args = ["ingest", str(path), "--store", "numpy", "--embedder", "hashing", "--json"]
        code, seconds, peak, note = _run_measured(args, home)
        index = _folder_mb(home / "numpy")
        size = path.stat().st_size / MB
        opened = float("nan")
        if index:  # the engine's own index in memory: a query's process opens it and nothing more
            query = ["query", "lamp", "--store", "numpy", "--top-k", "1", "--mode", "hybrid"]
            opened = _run_measured(query, home)[2]
        print(
            f"{name:<18} {size:>8.2f} {code:>4} {seconds:>7.1f} {peak:>11.0f} {index:>8.1f} "
            f"{opened:>9.0f} {peak - (opened if index else floor):>9.0f}  {note[:110]}",
            flush=True,
        )
        path.unlink()
    if options.work is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
