"""Request bodies of `rag serve`: JSON decoded and checked before any endpoint reads a field.

A body is refused (400, OpenAI's error shape, `param` naming the place) when it is not JSON, nests
deeper than `MAX_JSON_DEPTH`, holds a number that is not finite (`NaN`, `Infinity`), or holds a
string that is not valid Unicode text (a lone surrogate such as `"\\ud800"`, which JSON can spell but
no UTF-8 encoder can write). Everything downstream can then trust the values it is given.

Example:
    >>> decode_body(b'{"model": "rag", "temperature": 0.2}')
    {'model': 'rag', 'temperature': 0.2}
    >>> try:
    ...     decode_body(b'{"temperature": NaN}')
    ... except ApiError as error:
    ...     print(error.param)
    temperature
"""

from __future__ import annotations

import json
import math
from typing import Any

from rag.serve.wire import ApiError

__all__ = ["MAX_JSON_DEPTH", "decode_body", "field_path"]

MAX_JSON_DEPTH = 64
"""The deepest nesting of arrays and objects a request body may have."""


def field_path(parent: str, step: str | int) -> str:
    """The place of a value as OpenAI's `param` spells it: `messages[0].content`."""
    if isinstance(step, int):
        return f"{parent}[{step}]"
    return f"{parent}.{step}" if parent else step


def decode_body(raw: bytes) -> Any:
    """The JSON value of `raw`, checked (see the module docstring).

    Raises:
        ApiError: 400 naming what is wrong and, where there is one, the field (`param`).
    """
    try:
        value = json.loads(raw)
    except RecursionError:
        raise ApiError(f"the request body nests deeper than {MAX_JSON_DEPTH} levels") from None
    except ValueError as exc:  # also invalid UTF-8 and integers too long to convert
        raise ApiError(f"the request body is not valid JSON: {str(exc)[:200]}") from None
    _check(value)
    return value


def _check(value: Any) -> None:
    # An explicit stack: the walk itself never recurses, whatever the depth.
    stack: list[tuple[Any, str, int]] = [(value, "", 0)]
    while stack:
        item, path, depth = stack.pop()
        if isinstance(item, str):
            _check_text(item, path)
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise ApiError(f"{path or 'the body'}: {item!r} is not a finite number", param=path or None)
        elif isinstance(item, dict | list):
            if depth >= MAX_JSON_DEPTH:
                where = path or "the body"
                raise ApiError(f"{where}: nests deeper than {MAX_JSON_DEPTH} levels", param=path or None)
            if isinstance(item, dict):
                for name, child in item.items():
                    _check_text(name, path, key=True)
                    stack.append((child, field_path(path, name), depth + 1))
            else:
                stack.extend((child, field_path(path, i), depth + 1) for i, child in enumerate(item))


def _check_text(text: str, path: str, *, key: bool = False) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        what = "a key" if key else "the text"
        where = path or "the body"
        raise ApiError(
            f"{where}: {what} holds a lone surrogate at index {exc.start}, which is not valid Unicode text",
            param=path or None,
        ) from None
