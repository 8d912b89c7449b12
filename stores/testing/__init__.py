"""Shared tests and test data for vector stores; the suite: subclass `VectorStoreConformance`.

Example:
    >>> # tests/stores/test_mystore.py
    >>> # class TestMyStore(VectorStoreConformance):
    >>> #     @pytest.fixture
    >>> #     def store(self, embedding): return MyStore(embedding)
    >>> #     @pytest.fixture
    >>> #     def reopen(self): return lambda store, embedding: MyStore(embedding, path=store.path)

Importing this package, `stores.testing.cases` (data and a counting embedder) or
`stores.testing.concurrency` (the threads check) needs neither pytest nor hypothesis. The pytest suite
(`VectorStoreConformance`, `stores.testing.conformance`, `stores.testing.modes`) needs pytest and
`stores.testing.strategies` hypothesis, both in the `dev` extra: without them they raise
`MissingDependencyError` naming it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from stores.testing.cases import Reopen

if TYPE_CHECKING:
    from stores.testing.conformance import VectorStoreConformance

__all__ = ["Reopen", "VectorStoreConformance"]


def __getattr__(name: str) -> Any:
    # The suite is a pytest class: import it (and pytest) only when asked for.
    if name == "VectorStoreConformance":
        from stores.testing.conformance import VectorStoreConformance

        return VectorStoreConformance
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
