"""Lazy package exports (PEP 562): names whose modules import httpx, pydantic or other heavy libraries.

A package lists such names with the module that defines each; the module is imported on first access,
so `import rag` (and `rag --help`) stays fast and `rag.OpenAIChatModel` still works as before.

Example:
    >>> table = {"Tool": "rag.tools.decorator"}
    >>> __getattr__, __dir__ = lazy_exports(__name__, globals(), table)  # doctest: +SKIP
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, namespace: dict[str, Any], table: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A module `__getattr__` that imports `table[name]` on first use, and a `__dir__` that lists them."""

    def __getattr__(name: str) -> Any:
        if name not in table:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(table[name]), name)
        namespace[name] = value  # later lookups find it without this hook
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *table})

    return __getattr__, __dir__
