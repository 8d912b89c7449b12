"""Shared tests every vector store passes: subclass `VectorStoreConformance` and supply two fixtures.

Example:
    >>> # tests/stores/test_mystore.py
    >>> # class TestMyStore(VectorStoreConformance):
    >>> #     @pytest.fixture
    >>> #     def store(self, embedding): return MyStore(embedding)
    >>> #     @pytest.fixture
    >>> #     def reopen(self): return lambda store, embedding: MyStore(embedding, path=store.path)

Needs pytest and hypothesis (the `dev` extra).
"""

from stores.testing.conformance import Reopen, VectorStoreConformance

__all__ = ["Reopen", "VectorStoreConformance"]
