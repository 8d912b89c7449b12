"""A store opened on a Chroma server gives back its HTTP connections when it is closed or dropped.

chromadb 1.5.9 keeps every HttpClient's system (and its pooled sockets) in a class-level registry, and
`Client.close()` does not close the pools, so a leak shows as sockets that stay open until interpreter exit.
"""

from __future__ import annotations

import gc
import socket

import pytest

from rag.documents import Document
from rag.embeddings import HashingEmbedding
from stores.chroma import ChromaVectorStore

pytestmark = pytest.mark.server


def _sockets_to(url: str) -> set[int]:
    """Ids of the open TCP sockets of this process connected to the server at `url`."""
    port = int(url.rsplit(":", 1)[1])
    gc.collect()
    found = set()
    for obj in gc.get_objects():
        # An exact type check: isinstance() on every gc object can wake lazy modules that warn.
        if type(obj) is not socket.socket or obj.fileno() == -1:
            continue
        if obj.family not in (socket.AF_INET, socket.AF_INET6):  # Unix sockets name their peer by path
            continue
        try:
            peer = obj.getpeername()
        except OSError:  # not connected (any more)
            continue
        if peer[1] == port:
            found.add(id(obj))
    return found


def test_closing_a_server_store_closes_its_connections(
    chroma_server: str, embedding: HashingEmbedding
) -> None:
    before = _sockets_to(chroma_server)
    store = ChromaVectorStore(embedding, url=chroma_server, collection="socket-close")
    store.add([Document("a", "alpha")])
    opened = _sockets_to(chroma_server) - before
    assert opened, "the store should have talked to the server"
    store.close()
    assert not opened & _sockets_to(chroma_server)


def test_a_dropped_server_store_closes_its_connections(
    chroma_server: str, embedding: HashingEmbedding
) -> None:
    before = _sockets_to(chroma_server)
    store = ChromaVectorStore(embedding, url=chroma_server, collection="socket-drop")
    assert store.count() == 0
    opened = _sockets_to(chroma_server) - before
    assert opened
    del store  # the store's finalizer must release the client without an explicit close()
    assert not opened & _sockets_to(chroma_server)
