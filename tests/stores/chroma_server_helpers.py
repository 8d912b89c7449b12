"""Helpers for tests of Chroma server stores: the HTTP requests a store sends (recorded with httpx event
hooks), a second store "as from another process", and wrappers that run a write at a chosen moment."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx

from rag import Document
from stores import ChromaVectorStore


class Requests:
    """Each request a client sends, as `METHOD last-path-segment` (`sent`), and its JSON body (`bodies`)."""

    def __init__(self) -> None:
        self.sent: list[str] = []
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, request: httpx.Request) -> None:
        self.sent.append(f"{request.method} {request.url.path.rsplit('/', 1)[-1]}")
        self.bodies.append(json.loads(request.content) if request.content else {})


@contextmanager
def recording(store: ChromaVectorStore) -> Iterator[Requests]:
    """Records the requests of `store`'s HTTP client while the block runs (clients are shared between
    stores of one server, so the hook is removed afterwards)."""
    session: httpx.Client = store.chroma_client._server._session
    recorder = Requests()
    session.event_hooks["request"].append(recorder)
    try:
        yield recorder
    finally:
        session.event_hooks["request"].remove(recorder)


def other_url(url: str) -> str:
    """The same server under another host name: chromadb then gives it a client system (and HTTP pool)
    of its own, and the store its own lock, as in another process."""
    return url.replace("127.0.0.1", "localhost")


def state_after(*writes: list[Document], deleted: tuple[str, ...] = ()) -> dict[str, tuple[str, Any]]:
    """Each id's (text, metadata) after the writes given, in order, and the deletes."""
    found = {doc.id: (doc.text, doc.metadata) for docs in writes for doc in docs}
    return {doc_id: fields for doc_id, fields in found.items() if doc_id not in deleted}


class Hooked:
    """Wraps an object: `before` runs ahead of the first call of its method `name` (optionally only of
    calls whose `ids` include `only`), `after` after each call of it; `fired` says the first happened."""

    def __init__(
        self,
        inner: Any,
        name: str,
        before: Callable[[], object] | None = None,
        after: Callable[[], object] | None = None,
        only: str | None = None,
    ) -> None:
        self._inner, self._name, self._before, self._after, self._only = inner, name, before, after, only
        self.fired = False

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._inner, name)
        if name != self._name:
            return found

        def call(*args: Any, **kwargs: Any) -> Any:
            first = not self.fired and (self._only is None or self._only in (kwargs.get("ids") or []))
            if first:
                self.fired = True
                if self._before is not None:
                    self._before()
            answer = found(*args, **kwargs)
            if self._after is not None:
                self._after()
            return answer

        return call
