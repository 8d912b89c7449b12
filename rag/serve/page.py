"""The page at `rag serve`'s `/`: a question box whose answer streams in, with numbered sources.

Three static files shipped in `rag/serve/static/` (no build step). The page loads nothing from outside
the server: its Content-Security-Policy allows scripts, styles and requests to this origin only. It
holds no data itself and needs no token; it asks the API with the token the user types, so a server
bound beyond loopback shows nothing without it.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

__all__ = ["CONTENT_SECURITY_POLICY", "page_routes"]

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)

_FILES = {"/": "index.html", "/static/page.js": "page.js", "/static/page.css": "page.css"}
_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8", ".css": "text/css"}


@cache
def _content(name: str) -> bytes:
    return resources.files("rag.serve").joinpath("static", name).read_bytes()


async def _serve(request: Request) -> Response:
    name = _FILES[request.url.path]
    headers = {
        "Content-Security-Policy": CONTENT_SECURITY_POLICY,
        "X-Content-Type-Options": "nosniff",
        "Cache-Control": "no-cache",
    }
    return Response(_content(name), media_type=_TYPES[name[name.rindex(".") :]], headers=headers)


def page_routes() -> list[Route]:
    """The routes of the page and its two static files."""
    return [Route(path, _serve, methods=["GET"]) for path in _FILES]
