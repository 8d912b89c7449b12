"""`--keep-duplicates` and the store the reading commands search (`rag query`, `ask`, `chat`, `serve`).

Every command that shows documents reads the home's store through `rag.retrieval.DocumentsView`:
chat-memory turns that Python code wrote into the store never come back as documents, and a hit whose
text nearly repeats a better-ranked one (a page copied into another file) is left out and the page
filled from further down, unless `--keep-duplicates`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

__all__ = ["distinct_option"]

F = TypeVar("F", bound=Callable[..., Any])


def distinct_option(func: F) -> F:
    """`--keep-duplicates` (parameter `keep_duplicates`)."""
    return click.option(
        "--keep-duplicates",
        is_flag=True,
        help="Also use chunks whose text nearly repeats a better-ranked hit (a page copied into another "
        "file); by default each text is used once and the list filled from further down.",
    )(func)
