"""`Secret`: a string that never shows itself, in a module that imports nothing (the CLI reads tokens
before any HTTP library is loaded)."""

from __future__ import annotations

__all__ = ["Secret"]


class Secret:
    """A string that never shows itself in a repr or str (an API key).

    Example:
        >>> key = Secret("sk-123")
        >>> key, key.reveal()
        (Secret('***'), 'sk-123')
    """

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__
