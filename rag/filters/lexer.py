"""Filter text -> tokens, one at a time, so the parser reports the first problem in reading order.

Example:
    >>> [t.kind for t in tokenize("year >= 2020")]
    ['name', 'op', 'number', 'end']
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass

from rag.errors import FilterSyntaxError

__all__ = ["KEYWORDS", "Token", "tokenize"]

KEYWORDS = frozenset({"and", "or", "not", "in", "nin", "contains", "is", "null", "true", "false", "where"})

# Unicode letters may start a name; digits are ASCII only ([0-9]) so that "²" never reads as a number.
_NAME = re.compile(r"[^\W\d]\w*(?:\.[^\W\d]\w*)*")
# The sign may stand apart from the digits (`- 7`), as Spring AI's grammar reads it as its own token.
_NUMBER = re.compile(r"([+-]?)\s*((?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)")
_WORD_TAIL = re.compile(r"[\w.]*")
_DIGITS = frozenset("0123456789")
_ESCAPES = {"'": "'", '"': '"', "\\": "\\", "n": "\n", "t": "\t"}
_SYMBOLS = ("==", "!=", "<=", ">=", "&&", "||", "<", ">", "!", "(", ")", "[", "]", ",")
# Operators from other languages, caught here so the message can name them and the one meant.
_UNKNOWN = {"<>": "!=", "=": "==", "&": "AND", "|": "OR"}


@dataclass(frozen=True)
class Token:
    """One token: `kind` is name, keyword, string, number, op or end; `start`/`end` index the text.

    Example:
        >>> next(tokenize("a == 1"))
        Token(kind='name', value='a', start=0, end=1)
    """

    kind: str
    value: str | int | float
    start: int
    end: int


def _fail(reason: str, text: str, index: int) -> FilterSyntaxError:
    return FilterSyntaxError(reason, text, index + 1)


def _string(text: str, start: int) -> Token:
    quote = text[start]
    chars: list[str] = []
    index = start + 1
    while index < len(text):
        char = text[index]
        if char == quote:
            return Token("string", "".join(chars), start, index + 1)
        if char == "\\":
            escaped = text[index + 1 : index + 2]
            if not escaped:
                break
            if escaped not in _ESCAPES:
                allowed = "\\' \\\" \\\\ \\n \\t"
                raise _fail(f"unknown escape '\\{escaped}' in a string (use {allowed})", text, index)
            chars.append(_ESCAPES[escaped])
            index += 2
        else:
            chars.append(char)
            index += 1
    raise _fail(f"unterminated string: the {quote} here is never closed", text, start)


def _number(text: str, start: int) -> Token:
    match = _NUMBER.match(text, start)
    if match is None:
        raise _fail(f"unexpected character {text[start]!r}", text, start)
    literal, end = match.group(1) + match.group(2), match.end()
    is_integer = not any(c in literal for c in ".eE")
    if is_integer and text[end : end + 1] in ("L", "l"):
        end += 1  # Spring's long suffix: accepted and ignored
    tail = _WORD_TAIL.match(text, end)
    if tail is not None and tail.end() > end:
        raise _fail(f"malformed number {text[start : tail.end()]!r}", text, start)
    value: int | float
    try:
        value = int(literal) if is_integer else float(literal)
    except ValueError:
        # Python refuses to convert integers of more than 4300 digits.
        raise _fail(f"number {literal[:20] + '...'!r} is too long", text, start) from None
    if isinstance(value, float) and math.isinf(value):
        raise _fail(f"number {literal!r} is too large", text, start)
    return Token("number", value, start, end)


def _name(text: str, start: int) -> Token:
    match = _NAME.match(text, start)
    assert match is not None
    end = match.end()
    if text[end : end + 1] == ".":
        raise _fail(f"expected a name after {text[start : end + 1]!r}", text, end + 1)
    word = match.group()
    if word.isascii() and word.lower() in KEYWORDS:
        return Token("keyword", word.lower(), start, end)
    return Token("name", word, start, end)


def _symbol(text: str, start: int) -> Token:
    for symbol in _UNKNOWN:
        if text.startswith(symbol, start) and not text.startswith(symbol * 2, start):
            raise _fail(f"unknown operator {symbol!r} (write {_UNKNOWN[symbol]})", text, start)
    for symbol in _SYMBOLS:
        if text.startswith(symbol, start):
            return Token("op", symbol, start, start + len(symbol))
    raise _fail(f"unexpected character {text[start]!r}", text, start)


def _starts_number(text: str, index: int) -> bool:
    position = index
    if text[index] in "+-":
        position += 1
        while position < len(text) and text[position].isspace():
            position += 1
    if text[position : position + 1] == ".":
        position += 1
    return text[position : position + 1] in _DIGITS


def tokenize(text: str) -> Iterator[Token]:
    """Yield the tokens of `text`, then an `end` token; raise `FilterSyntaxError` at the first bad one."""
    index = 0
    while True:
        while index < len(text) and text[index].isspace():
            index += 1
        if index == len(text):
            yield Token("end", "", index, index)
            return
        char = text[index]
        if char in "'\"":
            token = _string(text, index)
        elif _starts_number(text, index):
            token = _number(text, index)
        elif char == "_" or char.isalpha():
            token = _name(text, index)
        else:
            token = _symbol(text, index)
        index = token.end
        yield token
