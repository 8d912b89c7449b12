"""The `rag` command line: the composition root that wires stores, embedders and models together.

Each command lives in its own module in this folder and is registered below.
"""

from __future__ import annotations

import click

__all__ = ["main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="rag-advisors", prog_name="rag")
def main() -> None:
    """rag-advisors: ingest documents, then ask questions about them.

    \b
    Example:
        rag ingest data/
        rag ask "How do I install it?"
    """
