"""Shared tests and test data for vector stores: subclass `VectorStoreConformance` (see its module).

This package, `stores.testing.cases` (data, a counting embedder) and `stores.testing.concurrency` (the
threads check) import without pytest or hypothesis. The suite (`stores.testing.conformance`) needs
pytest and `stores.testing.strategies` hypothesis, both in the `dev` extra; without them they raise
`MissingDependencyError` naming it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from stores.testing.cases import Reopen

if TYPE_CHECKING:
    from stores.testing.conformance import VectorStoreConformance

__all__ = ["Reopen", "VectorStoreConformance"]


def __getattr__(name: str) -> Any:  # the suite imports pytest: only when asked for
    if name == "VectorStoreConformance":
        from stores.testing.conformance import VectorStoreConformance

        return VectorStoreConformance
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
