"""The HTTP requests a Chroma server store sends, recorded with httpx event hooks."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx

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
