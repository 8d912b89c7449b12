"""`ServeConfig`: what a `rag serve` server allows (who, how much, how often), and the binding check."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from rag.errors import ConfigError
from rag.secret import Secret

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_RATE_LIMIT",
    "FAILED_AUTH_LIMIT",
    "ServeConfig",
    "check_binding",
    "is_loopback",
]

DEFAULT_MAX_BODY_BYTES = 1_000_000
"""Request bodies larger than this (bytes) are refused with 413."""
DEFAULT_RATE_LIMIT = 600
"""Requests per minute per client address (a bucket that refills continuously); 0 turns the limit off."""
FAILED_AUTH_LIMIT = 10
"""Failed token checks per minute per client address; past it the address gets 429 until the bucket
refills, whatever token it sends, so a token cannot be guessed at the rate limit's pace."""


def is_loopback(host: str) -> bool:
    """Whether `host` is a loopback address (127.0.0.0/8, ::1) or `localhost`."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_binding(host: str, token: Secret | None) -> None:
    """Refuse to expose a server beyond this machine without a token.

    Raises:
        ConfigError: `host` is not loopback and no token was given, or the token is blank.
    """
    _check_token(token)
    if token is None and not is_loopback(host):
        raise ConfigError(
            f"binding {host!r} exposes the server beyond this machine: give a bearer token with --token "
            "or RAG_SERVE_TOKEN (or bind 127.0.0.1)"
        )


def _check_token(token: Secret | None) -> None:
    if token is None:
        return
    text = token.reveal()
    if not text.strip():
        raise ConfigError(
            "the bearer token is blank: give a token of visible characters (or none on loopback)"
        )
    if text != text.strip() or any(c.isspace() or not c.isprintable() for c in text):
        # An HTTP header cannot carry such a token as it is: no client could ever send it.
        raise ConfigError("the bearer token holds spaces or control characters: no client could send it")


@dataclass(frozen=True)
class ServeConfig:
    """The server's settings. The token is a `Secret`: it never shows in a repr or a log.

    `forwarded_allow_ips` lists the proxies (addresses, networks, or `*`) whose `X-Forwarded-For`
    headers are believed; None believes no one, so the rate limit counts the address that connected.
    `home_name` is what the page at `/` names as the documents it asks (`/v1/models` lists it as `home`).

    Example:
        >>> ServeConfig(token=Secret("t0ken"))  # doctest: +NORMALIZE_WHITESPACE
        ServeConfig(model_name='rag', token=Secret('***'), max_body_bytes=1000000, rate_limit=600,
                    forwarded_allow_ips=None, home_name='')
    """

    model_name: str = "rag"
    token: Secret | None = None
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    rate_limit: int = DEFAULT_RATE_LIMIT
    forwarded_allow_ips: str | None = None
    home_name: str = ""

    def __post_init__(self) -> None:
        _check_token(self.token)
        if self.max_body_bytes < 1:
            raise ConfigError(f"max_body_bytes must be at least 1, got {self.max_body_bytes!r}")
        if self.rate_limit < 0:
            raise ConfigError(f"rate_limit must be >= 0 (0 turns it off), got {self.rate_limit!r}")
        if not self.model_name:
            raise ConfigError("model_name must not be empty")
