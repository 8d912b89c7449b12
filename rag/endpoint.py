"""Where an OpenAI-compatible client sends its requests, with which credentials, and how it shows them.

`Endpoint` joins a base URL (its query string kept) with the key from the arguments or `OPENAI_API_KEY`,
and knows the secrets to mask: the key, and any user info or credential-like query value in the URL.
"""

from __future__ import annotations

import base64
import os
import re

import httpx

from rag.errors import InvalidRequestError
from rag.redaction import Redactor, split_credentials
from rag.secret import Secret

__all__ = ["DEFAULT_OPENAI_BASE_URL", "Endpoint", "Secret", "resolve_openai_endpoint"]

DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1"


def resolve_openai_endpoint(base_url: str | None, api_key: str | None) -> tuple[str, Secret | None]:
    """The base URL and key from the arguments, else `OPENAI_BASE_URL` / `OPENAI_API_KEY`, else defaults.

    Empty environment variables count as unset. A URL without http(s) scheme is an `InvalidRequestError`.
    """
    url = base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_OPENAI_BASE_URL
    if not url.startswith(("http://", "https://")):
        # Credentials before an "@" and a query string may hold a key: never quote them.
        head = url.split("?", 1)[0]
        shown = re.sub(r"^([A-Za-z][\w+.-]*://)?[^/]*@", r"\1***@", head) + ("?***" if "?" in url else "")
        raise InvalidRequestError(f"base URL must start with http:// or https://, got {shown!r}")
    key = api_key or os.environ.get("OPENAI_API_KEY") or None
    return (url if "?" in url else url.rstrip("/")), Secret(key) if key else None


class Endpoint:
    """An OpenAI-compatible base URL with its credentials: where to send, what to show, what to mask.

    The key is sent as `Authorization: Bearer`. User info in the URL (`https://user:pw@host/v1`) is taken
    out of the URL and sent as HTTP Basic auth instead, unless there is a key, which wins. A query string
    (`?api-key=...&api-version=...`) stays on every request. `shown` masks all credentials.

    Example:
        >>> endpoint = Endpoint("https://proxy.example/v1?api-key=k-77", api_key="sk-1")
        >>> endpoint.shown, str(endpoint.url("embeddings")), endpoint
        ('https://proxy.example/v1?api-key=***', 'https://proxy.example/v1/embeddings?api-key=k-77', Endpoint('https://proxy.example/v1?api-key=***'))
    """

    def __init__(self, base_url: str | None, api_key: str | None) -> None:
        url, self.api_key = resolve_openai_endpoint(base_url, api_key)
        try:
            self._credentials = split_credentials(url)
        except httpx.InvalidURL as exc:
            raise InvalidRequestError(f"the base URL is not a valid URL ({type(exc).__name__})") from None
        secrets = [self.api_key.reveal()] if self.api_key is not None else []
        secrets += self._credentials.secrets
        if self._basic_token():
            secrets.append(self._basic_token())  # what goes on the wire, masked whole however short
        self.redactor = Redactor(secrets)
        self.shown = self._credentials.shown

    def url(self, path: str) -> httpx.URL:
        return self._credentials.endpoint(path)

    def show(self, path: str) -> str:
        """The URL of `path` to show in messages: credentials masked, query string left out."""
        return self.shown.split("?", 1)[0].rstrip("/") + "/" + path

    def headers(self) -> dict[str, str]:
        """The `Authorization` header, if there are credentials."""
        if self.api_key is not None:
            return {"Authorization": f"Bearer {self.api_key.reveal()}"}
        token = self._basic_token()
        return {"Authorization": f"Basic {token}"} if token else {}

    def _basic_token(self) -> str:
        user, password = self._credentials.username, self._credentials.password
        return base64.b64encode(f"{user}:{password}".encode()).decode() if user or password else ""

    def __repr__(self) -> str:
        return f"Endpoint({self.shown!r})"
