"""The keys holding values Chroma cannot index, as known to every store object of one process.

Filters on such keys are finished in Python (`stores.chroma.filters`), so a store must know every one
before it compiles a filter. The collection's metadata records them; reading it costs a call to Chroma
per filtered search. An embedded folder belongs to one process, so its stores share the set here
instead and read the metadata only when opened; stores reached through a server or a client you made
(other processes may write) read it before a filtered search, except one sent as a single query whose
clause also selects every record marked opaque for the filter's keys (`stores.chroma.reading.guarded_where`).

Example:
    >>> keys = shared_opaque(("chroma-path", "/data", "docs"))
    >>> sorted(keys.add({"huge"}))
    ['huge']
    >>> shared_opaque(("chroma-path", "/data", "docs")).current == {"huge"}
    True
"""

from __future__ import annotations

import threading
from collections.abc import Hashable

__all__ = ["OpaqueKeys", "shared_opaque"]

_registry: dict[Hashable, OpaqueKeys] = {}
_registry_lock = threading.Lock()


class OpaqueKeys:
    """A set of key names replaced (never changed in place), so readers may iterate an old one safely."""

    def __init__(self) -> None:
        self.current: frozenset[str] = frozenset()
        self._lock = threading.Lock()

    def add(self, keys: set[str] | frozenset[str]) -> frozenset[str]:
        """Add `keys`; returns the new whole set."""
        with self._lock:
            if not keys <= self.current:
                self.current = self.current | keys
            return self.current


def shared_opaque(key: Hashable | None) -> OpaqueKeys:
    """The `OpaqueKeys` of an embedded collection in this process (a private one for None)."""
    if key is None:
        return OpaqueKeys()
    with _registry_lock:
        found = _registry.get(key)
        if found is None:
            found = _registry[key] = OpaqueKeys()
        return found
