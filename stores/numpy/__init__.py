"""The numpy store (`--store numpy`): exact search over one float32 matrix, saved to a folder."""

from stores.numpy.store import NumpyVectorStore

__all__ = ["NumpyVectorStore"]
