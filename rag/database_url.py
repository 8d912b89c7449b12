"""Database URLs that are safe to show: the password masked, or taken out to scrub messages.

Used wherever a PostgreSQL URL may reach a message, a log line or a repr (the pgvector store, the
Postgres chat memory, `rag info`).

Example:
    >>> mask_url("postgresql://app:s3cret@db.example:5432/rag")
    'postgresql://app:***@db.example:5432/rag'
    >>> mask_url("host=db password=s3cret dbname=rag")
    'host=db password=*** dbname=rag'
    >>> scrub("auth failed for s3cret", "postgresql://app:s3cret@db/rag")
    'auth failed for ***'
"""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit

__all__ = ["mask_url", "scrub", "url_password"]

_KEYWORD_PASSWORD = re.compile(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)")
_QUERY_PASSWORD = re.compile(r"([?&]password=)([^&]*)")


def url_password(url: str) -> str | None:
    """The password written in a connection URL or keyword string, if any."""
    if "://" in url:
        try:
            password = urlsplit(url).password
        except ValueError:
            password = None
        if password:
            return unquote(password)
        found = _QUERY_PASSWORD.search(url)
        return unquote(found.group(2)) if found else None
    found = _KEYWORD_PASSWORD.search(url)
    return found.group(2).strip("'") if found else None


def mask_url(url: str) -> str:
    """The URL with its password replaced by `***` (safe to print and log)."""
    if "://" in url:
        scheme, _, rest = url.partition("://")
        authority, slash, path = rest.partition("/")
        if "@" in authority:
            userinfo, _, host = authority.rpartition("@")
            if ":" in userinfo:
                userinfo = userinfo.split(":", 1)[0] + ":***"
            authority = f"{userinfo}@{host}"
        return _QUERY_PASSWORD.sub(r"\1***", f"{scheme}://{authority}{slash}{path}")
    return _KEYWORD_PASSWORD.sub(r"\1***", url)


def scrub(text: str, url: str) -> str:
    """`text` with the URL's password (if any) replaced by `***`."""
    secret = url_password(url)
    return text.replace(secret, "***") if secret else text
