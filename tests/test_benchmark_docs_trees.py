"""benchmarks/datasets/docs_trees.py on pages the test writes: the question each page gives, and the
page left without it."""

from __future__ import annotations

import gzip
from pathlib import Path
from types import ModuleType

import pytest

from tests.benchmark_scripts import load_script

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "datasets" / "docs_trees.py"


@pytest.fixture(scope="module")
def trees() -> ModuleType:
    return load_script(SCRIPT, "docs_trees_under_test")


def test_a_cmake_page_gives_its_first_prose_sentence(trees: ModuleType) -> None:
    lines = [
        "add_widget",
        "----------",
        "",
        ".. versionadded:: 3.1",
        "",
        "Add a widget (i.e. a part) to the :prop_tgt:`WIDGETS` list of a target.  It is kept there.",
        "",
        "More text.",
    ]
    kept, question = trees.cmake_summary(lines)
    assert question == "Add a widget (i.e. a part) to the WIDGETS list of a target."
    assert kept == [*lines[:5], "It is kept there.", "", "More text."]  # only the sentence goes
    assert trees.words_besides_title(kept) == 6  # the directive and the adornment are not words
    assert trees.cmake_summary(["x", "-", "", "Too short here."]) is None


def test_a_man_page_becomes_markdown_without_its_name_line(trees: ModuleType, tmp_path: Path) -> None:
    source = tmp_path / "widget.8.gz"
    troff = (
        '.TH WIDGET 8\n.SH NAME\nwidget \\- Widgets f\\(:ur die Verwaltung\n.SH "DESCRIPTION"\n'
        ".B widget\nmanages \\fBwidgets\\fR.\n.SS Options\nNone.\n"
    )
    with gzip.open(source, "wt", encoding="utf-8") as handle:
        handle.write(troff)
    name, question, markdown = trees.man_page(source)
    assert (name, question) == ("widget", "Widgets für die Verwaltung")
    assert markdown.startswith("# widget\n\n## Description\n")
    assert "manages widgets." in markdown and "### Options" in markdown
    assert "Verwaltung" not in markdown


def test_troff_strings_keep_apostrophes_and_quotes(trees: ModuleType) -> None:
    line = r"nom de connexion de l\*(Aqutilisateur (\(Fo\ \&login\ \&\(Fc), \*(L\"C\*(R\" et \*(C+"
    assert trees._troff_text(line) == 'nom de connexion de l\'utilisateur (« login »), "C" et C++'
