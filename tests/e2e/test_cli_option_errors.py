"""A bad value on the command line is reported in one line under the option or argument the user typed
(`--exact`, `--filter`, `TEXT`), never under a Python parameter name (`exact=True`, `query text`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from click.testing import Result

Cli = Callable[..., Result]


def test_exact_on_a_chroma_home_names_the_flag(cli: Cli, docs: Path) -> None:
    assert cli("ingest", docs).exit_code == 0  # the default store: Chroma
    for command in ("query", "ask"):
        refused = cli(command, "brass bolts", "--exact")
        assert refused.exit_code == 2, refused.stderr
        assert refused.stderr.startswith("error: --exact: the chroma store searches an approximate index")
        assert "numpy" in refused.stderr and "pgvector" in refused.stderr
        assert "exact=True" not in refused.stderr and "Traceback" not in refused.stderr


def test_filter_syntax_errors_name_the_option(cli: Cli, docs: Path) -> None:
    assert cli("ingest", docs, "--store", "numpy").exit_code == 0
    for args in (
        ("query", "bolts", "--filter", "lang = 'en'"),
        ("ask", "bolts", "--filter", "lang = 'en'"),
        ("chat", "--filter", "lang = 'en'"),
        ("delete", "--filter", "lang = 'en'"),
        ("eval", docs / "tides.md", "--filter", "none", "--filter", "lang = 'en'"),
    ):
        result = cli(*args, input="")
        assert result.exit_code == 2, (args, result.stderr)
        assert result.stderr.startswith("error: --filter: unknown operator '=' (write ==) at column 6\n")
    assert cli("query", "bolts", "--filter", "lang == 'en'").exit_code == 0


def test_blank_text_names_the_argument(cli: Cli, docs: Path) -> None:
    assert cli("ingest", docs, "--store", "numpy").exit_code == 0
    for command, name in (("query", "TEXT"), ("ask", "QUESTION")):
        result = cli(command, "   ")
        assert result.exit_code == 2
        assert result.stderr == f"error: {name} must not be blank\n"
        assert "non-empty string" not in result.stderr
