"""`Media`: an image attached to a user message (Spring AI's `Media`: a MIME type and bytes or a URL).

Vision models receive it as an OpenAI `image_url` content part: the bytes as a `data:` URL, or the
https URL as given. The type is checked against the bytes' own signature and the size against
`MAX_MEDIA_BYTES`, so a wrong file fails here with its name, not as a model's 400. Chat memory never
keeps the bytes: `forget_media` turns a message's media into a placeholder in its metadata.

Example:
    >>> png = b"\\x89PNG\\r\\n\\x1a\\n" + bytes(8)
    >>> image = Media("image/png", png, name="dot.png")
    >>> image, image.wire_url()[:22]
    (Media(mime_type='image/png', bytes=16, name='dot.png'), 'data:image/png;base64,')
    >>> Media.from_url("https://example.com/chart.webp").mime_type
    'image/webp'
"""

from __future__ import annotations

import base64
import dataclasses
import mimetypes
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from rag.errors import InvalidRequestError

__all__ = ["IMAGE_TYPES", "MAX_MEDIA_BYTES", "MEDIA_KEY", "Media", "forget_media"]

MAX_MEDIA_BYTES = 20 * 1024 * 1024
"""The largest image sent inline (OpenAI's limit per image)."""
MEDIA_KEY = "rag.media"
"""Message metadata key: what `forget_media` kept of a message's media (type, size, name, https URL)."""

_SIGNATURES: dict[str, tuple[bytes, ...]] = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
    "image/webp": (b"RIFF",),
}
IMAGE_TYPES = tuple(_SIGNATURES)
"""The image types vision models accept."""
_ALIASES = {"image/jpg": "image/jpeg", "image/pjpeg": "image/jpeg"}


def _image_type(value: str, what: str) -> str:
    mime = _ALIASES.get(value.strip().lower(), value.strip().lower())
    if mime not in _SIGNATURES:
        raise InvalidRequestError(
            f"{what} has type {value!r}, which vision models do not take; use one of {list(IMAGE_TYPES)!r}"
        )
    return mime


def _guess(name: str, what: str) -> str:
    guessed, _ = mimetypes.guess_type(name)
    if guessed is None:
        suffix = Path(urlsplit(name).path).suffix.lower()
        guessed = {".webp": "image/webp"}.get(suffix)
    if guessed is None:
        raise InvalidRequestError(f"cannot tell the image type of {what}: give mime_type= (e.g. 'image/png')")
    return _image_type(guessed, what)


def _signature_type(data: bytes) -> str | None:
    for mime, signatures in _SIGNATURES.items():
        if data.startswith(signatures) and (mime != "image/webp" or data[8:12] == b"WEBP"):
            return mime
    return None


@dataclass(frozen=True)
class Media:
    """An image for a vision model: its MIME type and either its bytes or an https URL.

    Build one from a file with `Media.from_file(path)` or from a URL with `Media.from_url(url)`; give
    them with `client.prompt().user(text, media=[...])` or `.media(...)`. The repr shows the size, never
    the bytes.

    Example:
        >>> Media("image/gif", b"GIF89a" + bytes(10)).placeholder()
        {'mime_type': 'image/gif', 'bytes': 16}
        >>> Media("image/png", b"%PDF-1.7")
        Traceback (most recent call last):
        ...
        rag.errors.InvalidRequestError: image has type 'image/png' but its bytes are not an image of a \
type vision models take (png, jpeg, gif, webp)

    Raises:
        InvalidRequestError: an unsupported type, bytes that are not that type, an empty or too large
            image, a URL that is not https, or both or neither of bytes and URL.
    """

    mime_type: str
    data: bytes | None = dataclasses.field(default=None, repr=False)
    url: str | None = None
    name: str | None = None

    def __post_init__(self) -> None:
        what = f"image {self.name!r}" if self.name else "image"
        object.__setattr__(self, "mime_type", _image_type(self.mime_type, what))
        if (self.data is None) == (self.url is None):
            raise InvalidRequestError(
                f"{what} needs either its bytes (data=) or an https URL (url=), not both"
            )
        if self.url is not None:
            if urlsplit(self.url).scheme != "https" or not urlsplit(self.url).netloc:
                raise InvalidRequestError(
                    f"{what} URL {self.url[:80]!r} is not an https URL; give the bytes with Media.from_file"
                )
            return
        data = self.data
        if not isinstance(data, bytes | bytearray | memoryview):
            raise InvalidRequestError(f"{what} data must be bytes, got {type(data).__name__}")
        data = bytes(data)
        object.__setattr__(self, "data", data)
        if not data:
            raise InvalidRequestError(f"{what} is empty")
        if len(data) > MAX_MEDIA_BYTES:
            raise InvalidRequestError(
                f"{what} has {len(data):,} bytes; the largest image sent is {MAX_MEDIA_BYTES:,} bytes"
            )
        found = _signature_type(data)
        if found is None:
            raise InvalidRequestError(
                f"{what} has type {self.mime_type!r} but its bytes are not an image of a type vision models "
                "take (png, jpeg, gif, webp)"
            )
        if found != self.mime_type:
            raise InvalidRequestError(f"{what} has type {self.mime_type!r} but its bytes are {found!r}")

    @classmethod
    def from_file(cls, path: str | os.PathLike[str], mime_type: str | None = None) -> Media:
        """The image in a file; its type from `mime_type` or the file name, checked against the bytes.

        Raises:
            InvalidRequestError: a missing file, a file too large (not read), or as `Media`.
        """
        file = Path(path)
        what = f"image file {str(file)!r}"
        mime = _image_type(mime_type, what) if mime_type else _guess(file.name, what)
        try:
            size = file.stat().st_size
            if size > MAX_MEDIA_BYTES:
                raise InvalidRequestError(
                    f"{what} has {size:,} bytes; the largest image sent is {MAX_MEDIA_BYTES:,} bytes"
                )
            data = file.read_bytes()
        except OSError as exc:
            raise InvalidRequestError(f"cannot read {what}: {exc.strerror or exc}") from exc
        return cls(mime, data, name=file.name)

    @classmethod
    def from_url(cls, url: str, mime_type: str | None = None) -> Media:
        """An image the model fetches itself from an https URL; its type from `mime_type` or the URL."""
        mime = _image_type(mime_type, f"image {url[:80]!r}") if mime_type else _guess(url, repr(url[:80]))
        return cls(mime, url=url)

    @property
    def size(self) -> int | None:
        """The number of bytes (None for a URL)."""
        return None if self.data is None else len(self.data)

    def wire_url(self) -> str:
        """What an `image_url` content part carries: the https URL, or the bytes as a base64 `data:` URL."""
        if self.url is not None:
            return self.url
        assert self.data is not None  # one of the two is set (checked at construction)
        return f"data:{self.mime_type};base64,{base64.b64encode(self.data).decode('ascii')}"

    def placeholder(self) -> dict[str, Any]:
        """What memory keeps instead of the image: type, size, name and https URL (never the bytes)."""
        kept: dict[str, Any] = {"mime_type": self.mime_type}
        if self.data is not None:
            kept["bytes"] = len(self.data)
        if self.url is not None:
            kept["url"] = self.url
        if self.name is not None:
            kept["name"] = self.name
        return kept

    def __repr__(self) -> str:
        shown = f"url={self.url!r}" if self.url is not None else f"bytes={self.size}"
        name = f", name={self.name!r}" if self.name is not None else ""
        return f"Media(mime_type={self.mime_type!r}, {shown}{name})"


def forget_media(message: Any) -> Any:
    """The message without its media's bytes: a user message's media become placeholders in its metadata
    (`MEDIA_KEY`); any other message is returned as it is.

    Example:
        >>> from rag.chat import UserMessage
        >>> stored = forget_media(UserMessage("What is this?", media=[Media("image/gif", b"GIF87a..")]))
        >>> stored.media, stored.metadata
        ((), {'rag.media': [{'mime_type': 'image/gif', 'bytes': 8}]})
    """
    media = getattr(message, "media", ())
    if not media:
        return message
    metadata = {**message.metadata, MEDIA_KEY: [item.placeholder() for item in media]}
    return dataclasses.replace(message, metadata=metadata, media=())
