"""Keeping credentials out of messages: the API key, its near-copies, and secrets in a base URL.

A server or proxy may quote what it received: the `Authorization` header verbatim, URL-encoded, base64
encoded (HTTP Basic), or cut short. `Redactor` masks all of these: besides each secret and its encodings,
any run of `FRAGMENT` or more characters of one (or of its base64 form at any byte alignment) becomes
`***`, so a truncated copy is caught too. Secrets shorter than `MIN_FRAGMENT_SECRET` are only masked
whole, as a token of their own (not inside a longer word), since short runs of them occur in ordinary text.

`split_credentials` takes a base URL apart into the URL to send requests to (user info removed, query kept),
the credentials it carried, and a form safe to show (`https://***@host/v1?api-key=***`).
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import re
import weakref
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from urllib.parse import quote, quote_plus

import httpx

__all__ = [
    "FRAGMENT",
    "MIN_FRAGMENT_SECRET",
    "Credentials",
    "Redactor",
    "masked_errors",
    "split_credentials",
]

FRAGMENT = 8
"""A run of this many characters of a secret (or of its encodings) counts as a copy of it."""
MIN_FRAGMENT_SECRET = 16
"""Secrets at least this long are also masked by fragment; shorter ones only whole."""
MASK = "***"

_SECRET_PARAM = re.compile(r"key|token|secret|sig|auth|pass|pwd|credential", re.IGNORECASE)
"""Query parameters whose value is a credential (`api-key`, `access_token`, `sig`...)."""


def _base64_cores(raw: bytes) -> list[str]:
    """The characters of base64 text that encode `raw` alone, at each of the three byte alignments.

    Inside a longer encoded header (`user:key`, `Bearer key`) the secret starts at any offset mod 3; the
    first and last characters mix in neighbouring bytes, so only the part in between is fixed.
    """
    cores = []
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        for shift in range(3):
            text = encode(b"\0" * shift + raw).decode().rstrip("=")
            start = -(-shift * 8 // 6)
            end = (shift + len(raw)) * 8 // 6
            cores.append(text[start:end])
    return cores


def _token_pattern(forms: list[str]) -> re.Pattern[str] | None:
    """Any of `forms` as a token of its own: a short secret is not masked inside words ("k" in "key")."""
    if not forms:
        return None
    alternatives = "|".join(re.escape(form) for form in forms)
    return re.compile(rf"(?<![A-Za-z0-9])(?:{alternatives})(?![A-Za-z0-9])")


_BASE64_RUN = re.compile(r"[A-Za-z0-9+/_-]{12,}={0,2}")
_DECODE_DEPTH = 3


def _base64_decodings(run: str) -> list[str]:
    """`run` decoded as standard and URL-safe base64 (lenient about padding); text only, may be empty."""
    body = run.rstrip("=")
    body = body[: len(body) - 1] if len(body) % 4 == 1 else body
    padded = body + "=" * (-len(body) % 4)
    texts = []
    for decode in (base64.b64decode, base64.urlsafe_b64decode):
        try:
            texts.append(decode(padded).decode("utf-8", errors="replace"))
        except (binascii.Error, ValueError):
            continue
    return texts


def _variants(secret: str) -> set[str]:
    raw = secret.encode()
    forms = {secret, quote(secret, safe=""), quote_plus(secret), json.dumps(secret)[1:-1], raw.hex()}
    forms.update(_base64_cores(raw))
    return {form for form in forms if form}


class Redactor:
    """Masks secrets and their near-copies in text; callable.

    Example:
        >>> redact = Redactor(["sk-0123456789abcdefXYZ"])
        >>> redact("echo: Bearer sk-0123456789abcdefXYZ, cut: sk-0123456789a...")
        'echo: Bearer ***, cut: ***...'
        >>> redact
        Redactor(1 secret)
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        kept = sorted({s for s in secrets if s}, key=len, reverse=True)
        self._count = len(kept)
        self._whole: list[str] = []
        self._grams: set[str] = set()
        for secret in kept:
            for form in _variants(secret):
                if len(secret) >= MIN_FRAGMENT_SECRET and len(form) >= FRAGMENT:
                    self._grams.update(form[i : i + FRAGMENT] for i in range(len(form) - FRAGMENT + 1))
                else:
                    self._whole.append(form)
        self._whole.sort(key=len, reverse=True)
        self._pattern = _token_pattern(self._whole)
        # Decoded base64 is mostly noise: only forms long enough not to turn up in noise by chance count.
        self._decoded_pattern = _token_pattern([form for form in self._whole if len(form) >= 6])
        _LOG_FILTER.redactors.add(self)

    def __call__(self, text: str) -> str:
        if not self._count or not text:
            return text
        marked = bytearray(len(text))
        for start, end in self._spans(text):
            marked[start:end] = b"\1" * (end - start)
        # A secret can also hide in base64 of base64 (a proxy that encodes the Basic header it got):
        # decode each base64-looking run and mask the run whole when a secret shows inside.
        for match in _BASE64_RUN.finditer(text):
            if self._encodes_secret(match.group(), _DECODE_DEPTH):
                marked[match.start() : match.end()] = b"\1" * (match.end() - match.start())
        if not any(marked):
            return text
        return re.sub("\1+", MASK, "".join("\1" if m else c for c, m in zip(text, marked, strict=True)))

    def _spans(self, text: str, *, decoded: bool = False) -> Iterator[tuple[int, int]]:
        """Where `text` holds a secret: its whole forms, and runs of `FRAGMENT` characters of one."""
        pattern = self._decoded_pattern if decoded else self._pattern
        if pattern is not None:
            for match in pattern.finditer(text):
                yield match.start(), match.end()
        grams = self._grams
        if grams:
            for i in range(len(text) - FRAGMENT + 1):
                if text[i : i + FRAGMENT] in grams:
                    yield i, i + FRAGMENT

    def _encodes_secret(self, run: str, depth: int) -> bool:
        for decoded in _base64_decodings(run):
            if next(self._spans(decoded, decoded=True), None) is not None:
                return True
            if depth > 1 and any(
                self._encodes_secret(inner.group(), depth - 1) for inner in _BASE64_RUN.finditer(decoded)
            ):
                return True
        return False

    def __bool__(self) -> bool:
        return self._count > 0

    def __repr__(self) -> str:
        return f"Redactor({self._count} secret{'' if self._count == 1 else 's'})"


@dataclass(frozen=True, repr=False)
class Credentials:
    """A base URL taken apart: `url` to send to, the `username`/`password` it held, `shown` to display."""

    url: httpx.URL
    shown: str
    username: str
    password: str
    query_secrets: tuple[str, ...]

    def endpoint(self, path: str) -> httpx.URL:
        """`path` appended to the base URL's path; its query string is kept."""
        return self.url.copy_with(path=self.url.path.rstrip("/") + "/" + path.lstrip("/"))

    @property
    def secrets(self) -> tuple[str, ...]:
        return tuple(s for s in (self.username, self.password, *self.query_secrets) if s)

    def __repr__(self) -> str:
        return f"Credentials({self.shown!r})"


def split_credentials(base_url: str) -> Credentials:
    """`base_url` without its user info, the credentials it carried, and a form that hides them.

    Example:
        >>> parts = split_credentials("https://me:pw-123@proxy.example/v1/?api-key=k9&api-version=2")
        >>> parts.shown, str(parts.endpoint("chat/completions"))
        ('https://***@proxy.example/v1?api-key=***&api-version=2', 'https://proxy.example/v1/chat/completions?api-key=k9&api-version=2')
    """
    url = httpx.URL(base_url)
    path = url.path.rstrip("/")
    clean = url.copy_with(username=None, password=None, path=path or "/")
    params = url.params.multi_items()
    hidden = tuple(value for name, value in params if value and _SECRET_PARAM.search(name))
    shown_query = "&".join(
        f"{quote_plus(n)}={MASK if v and _SECRET_PARAM.search(n) else quote_plus(v)}" for n, v in params
    )
    netloc = clean.netloc.decode("ascii")
    userinfo = f"{MASK}@" if url.userinfo else ""
    shown = f"{url.scheme}://{userinfo}{netloc}{path}" + (f"?{shown_query}" if shown_query else "")
    return Credentials(clean, shown, url.username, url.password or "", hidden)


class _RedactingFilter(logging.Filter):
    """Masks every live `Redactor`'s secrets in httpx's log lines, which print request URLs (queries)."""

    def __init__(self) -> None:
        super().__init__()
        self.redactors: weakref.WeakSet[Redactor] = weakref.WeakSet()

    def filter(self, record: logging.LogRecord) -> bool:
        redactors = list(self.redactors)
        if redactors:
            message = record.getMessage()
            masked = message
            for redactor in redactors:
                masked = redactor(masked)
            if masked != message:
                record.msg, record.args = masked, None
        return True


_LOG_FILTER = _RedactingFilter()
logging.getLogger("httpx").addFilter(_LOG_FILTER)


@contextmanager
def masked_errors(redactor: Redactor) -> Iterator[None]:
    """Re-raise any exception from the block with its message and `body`/`text` masked by `redactor`.

    A last line of defence around a model call: whatever path built the error message, no secret leaves.
    """
    try:
        yield
    except Exception as exc:
        if redactor:
            exc.args = tuple(redactor(arg) if isinstance(arg, str) else arg for arg in exc.args)
            for name in ("body", "text"):
                value = getattr(exc, name, None)
                if isinstance(value, str):
                    setattr(exc, name, redactor(value))
        raise
