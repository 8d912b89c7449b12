"""What `rag ingest` says on stderr about a large real tree: files that gave no text, and skipped files
counted and hinted at in a few readable lines however many kinds of file the tree holds."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from click.testing import Result

Cli = Callable[..., Result]


def test_files_that_give_no_text_are_named(cli: Cli, tmp_path: Path) -> None:
    """A page that only includes another file (CMake's Help/module/*.rst) is read but gives no chunk:
    the run says so instead of leaving the user to find out from questions nothing answers."""
    tree = tmp_path / "Help"
    (tree / "module").mkdir(parents=True)
    (tree / "guide.rst").write_text("Guide\n=====\n\nLink a library with target_link_libraries.\n", "utf-8")
    for name in ("FindA", "FindB", "FindC", "FindD"):
        (tree / "module" / f"{name}.rst").write_text(
            f".. cmake-module:: ../../Modules/{name}.cmake\n", "utf-8"
        )
    first = cli("ingest", tree, "--store", "numpy")
    assert first.exit_code == 0, first.stderr
    assert (
        "warning: 4 file(s) held no text to search (0 chunks): Help/module/FindA.rst, "
        "Help/module/FindB.rst, Help/module/FindC.rst and 1 more"
    ) in first.stderr.splitlines()
    again = cli("ingest", tree, "--store", "numpy")  # nothing read this run: nothing to say
    assert again.exit_code == 0 and "no text" not in again.stderr


def test_many_kinds_of_skipped_file_fit_in_a_few_lines(cli: Cli, tmp_path: Path) -> None:
    """A system's documentation folder holds dozens of suffixes: the warning names the most frequent
    kinds and counts the rest, and the hint offers the commonest `--as-text` suffixes only."""
    tree = tmp_path / "doc"
    tree.mkdir()
    (tree / "guide.md").write_text("# Guide\n\nThe lantern needs oil.\n", "utf-8")
    for i in range(20):
        (tree / f"data.kind{i:02d}").write_text("x\n", "utf-8")
    for i in range(8):
        (tree / f"pkg{i}").mkdir()
        (tree / f"pkg{i}" / "README.Debian").write_text("Read me.\n", "utf-8")
        (tree / f"pkg{i}" / f"NEWS.v{i}").write_text("News.\n", "utf-8")
    (tree / "pkg0" / "README.source").write_text("Source notes.\n", "utf-8")
    result = cli("ingest", tree, "--store", "numpy")
    assert result.exit_code == 0, result.stderr
    [skipped] = [line for line in result.stderr.splitlines() if line.startswith("warning: skipped")]
    assert skipped == (
        "warning: skipped 37 files: .debian x8, .kind00 x1, .kind01 x1, .kind02 x1, .kind03 x1, .kind04 x1, "
        ".kind05 x1, .kind06 x1, .kind07 x1, .kind08 x1, .kind09 x1, .kind10 x1 and 18 more kinds"
    )
    [hint] = [line for line in result.stderr.splitlines() if line.startswith("hint:")]
    assert hint == (
        "hint: --as-text .debian --as-text .source --as-text .v0 --as-text .v1 --as-text .v2 reads "
        "NEWS.v0, NEWS.v1, NEWS.v2 and 2 more as plain text (5 more suffixes name such files)"
    )
