"""Test doubles that ship with the library: a scripted chat model and a deterministic embedder.

They work in notebooks and examples as well as in tests.

Example:
    >>> from rag.testing import FakeChatModel
    >>> from rag.chat import Prompt
    >>> FakeChatModel(["Hello!"]).call(Prompt("Hi")).text
    'Hello!'
"""

from rag.testing.fake_chat import FakeChatModel, FakeReply
from rag.testing.fake_embedding import FakeEmbedding

__all__ = ["FakeChatModel", "FakeEmbedding", "FakeReply"]
