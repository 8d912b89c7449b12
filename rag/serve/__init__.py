"""`rag serve`: a home folder behind the OpenAI chat-completions API, plus a search endpoint.

Needs the `serve` extra (`pip install 'rag-advisors[serve]'`: Starlette and uvicorn). Importing this package
does not import them; `create_app` does.

Example:
    >>> from rag.serve import ServeConfig, check_binding
    >>> check_binding("127.0.0.1", None)  # loopback: no token needed
    >>> ServeConfig().rate_limit
    600
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rag.serve.config import ServeConfig, check_binding, is_loopback
from rag.serve.service import RagService

if TYPE_CHECKING:
    from starlette.applications import Starlette

__all__ = ["RagService", "ServeConfig", "check_binding", "create_app", "is_loopback"]


def create_app(service: RagService, config: ServeConfig | None = None) -> Starlette:
    """The ASGI app (see `rag.serve.app.create_app`). Raises `ConfigError` without the `serve` extra."""
    try:
        from rag.serve.app import create_app as build
    except ImportError as exc:  # pragma: no cover - the extra is installed where tests run
        from rag.errors import ConfigError

        raise ConfigError("rag serve needs the 'serve' extra: pip install 'rag-advisors[serve]'") from exc
    app: Any = build(service, config)
    return app  # type: ignore[no-any-return]
