"""`rag ask "How do I install it?"` on a docs page cut at every heading quotes the numbered steps, though
the chunk holding them ranks below the page's short heading-only chunks (every chunk of the page carries
"install" in its title, headings and path; the short ones win BM25's length normalisation)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from click.testing import Result

RunCli = Callable[..., Result]

PAGE = """---
title: Installing Marlin
---

# Install

This page explains how to put the marlin daemon and its console on a harbour computer.

## Requirements

- A 64-bit computer with 2 GB of memory.
- Python 3.12 or newer.

## From packages

Packages are the quickest path and get fixes automatically.

### Arch Linux

Marlin is in the extra repository: `pacman -S marlin`.

## From source

Building from source suits contributors and boards without packages.

1. Install a Go toolchain, version 1.22 or newer. The tide reader is written in Go.
2. Clone the repository and run `make deps` to fetch the libraries.
3. Run `./configure --prefix=/opt/marlin`, then `make` and `sudo make install`.

A full build takes about five minutes.

## After installing

Start the service with `sudo systemctl enable --now marlind`. It runs as the user `tide`.
"""


def test_how_do_i_install_it_quotes_the_numbered_steps(cli: RunCli, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "install.md").write_text(PAGE, encoding="utf-8")
    (docs / "tides.md").write_text(
        "# Tides\n\nThe daemon reads the tide gauge every minute.\n", encoding="utf-8"
    )
    assert cli("ingest", docs).exit_code == 0
    # Lexical search ranks the steps' chunk below the 4 passages `rag ask` retrieves: the answer must
    # reach it through the window read around the "From source" hit's neighbours.
    lexical = ("--mode", "lexical")
    found = json.loads(cli("query", "How do I install it?", "--top-k", "8", "--json", *lexical).stdout)
    [rank] = [hit["rank"] for hit in found if "make deps" in hit["text"]]
    assert rank > 4, "the steps' chunk is not among the 4 passages `rag ask` retrieves"
    asked = cli("ask", "How do I install it?", "--no-stream", *lexical)
    assert asked.exit_code == 0, asked.stderr
    lines = asked.stdout.splitlines()
    assert [line for line in lines if line.startswith("- ") and line[2].isdigit()] == [
        "- 1. Install a Go toolchain, version 1.22 or newer. The tide reader is written in Go. "
        "[docs/install.md]",
        "- 2. Clone the repository and run `make deps` to fetch the libraries. [docs/install.md]",
        "- 3. Run `./configure --prefix=/opt/marlin`, then `make` and `sudo make install`. [docs/install.md]",
    ]
