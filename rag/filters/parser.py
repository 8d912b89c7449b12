"""Filter text -> filter tree, following the grammar of docs/filters.md.

The parser keeps pending operators on an explicit stack instead of recursing, so a chain of thousands of
clauses parses in linear time and no input can raise `RecursionError`. AND and OR build left-deep trees,
exactly as the builder's `&` and `|` do.

Example:
    >>> from rag.filters import key, parse
    >>> parse("year >= 2020 AND NOT draft == true") == (key("year") >= 2020) & ~(key("draft") == True)
    True
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from rag.errors import FilterError, FilterSyntaxError
from rag.filters.lexer import Token, tokenize
from rag.filters.normal import MAX_DEPTH
from rag.filters.tree import And, Comparison, Filter, Not, Op, Or, Scalar

__all__ = ["MAX_COMPARISONS", "MAX_FILTER_LENGTH", "MAX_LIST_VALUES", "MAX_NESTING", "as_filter", "parse"]

MAX_NESTING = MAX_DEPTH
"""How many NOT, AND and OR operators may wait for their right side at once: a bound on the depth of the
tree, so that every tree the parser returns is within `rag.filters.normal.MAX_DEPTH` and every store
answers it. Parentheses alone cost nothing and are not limited."""
MAX_FILTER_LENGTH = 100_000
"""The longest filter text, in characters, the parser reads; a longer one is refused before any work."""
MAX_COMPARISONS = 5_000
"""The most comparisons one filter text may hold (`a == 1 AND b == 2` holds two)."""
MAX_LIST_VALUES = 10_000
"""The most values one `IN [...]` / `NOT IN [...]` list in filter text may hold."""

_COMPARE = {"==": Op.EQ, "!=": Op.NE, "<": Op.LT, "<=": Op.LE, ">": Op.GT, ">=": Op.GE}
_SIMPLE_WORDS = {"in": Op.IN, "nin": Op.NIN, "contains": Op.CONTAINS}
_AFTER_NOT = {"in": Op.NIN, "contains": Op.NOT_CONTAINS}
_CONNECTIVES = frozenset({"and", "or", "not"})
# SQL's and other languages' pattern operators: a user reaching for one wants to match part of a value.
_PATTERN_WORDS = frozenset(
    {"LIKE", "ILIKE", "GLOB", "MATCH", "MATCHES", "REGEXP", "STARTSWITH", "STARTS_WITH"}
)
_NO_PATTERNS = (
    " (filters match whole values, never patterns: use == or IN [...] for values,"
    " CONTAINS for an item of a list such as ingest's dirs)"
)


@dataclass(frozen=True)
class _Pending:
    """An operator waiting for its right side: "(", "not", "and" (with its left side) or "or"."""

    kind: str
    token: Token
    left: Filter | None = None
    depth: int = 0


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self._tokens: Iterator[Token] = tokenize(text)
        self.token = next(self._tokens)
        self.previous: Token | None = None
        self.comparisons = 0

    # -- tokens -------------------------------------------------------------------------------------

    def advance(self) -> Token:
        self.previous, self.token = self.token, next(self._tokens, self.token)
        return self.previous

    def is_op(self, symbol: str) -> bool:
        return self.token.kind == "op" and self.token.value == symbol

    def is_word(self, *words: str) -> bool:
        return self.token.kind == "keyword" and self.token.value in words

    def source(self, token: Token) -> str:
        return self.text[token.start : token.end]

    def fail(self, reason: str, token: Token | None = None) -> FilterSyntaxError:
        return FilterSyntaxError(reason, self.text, (token or self.token).start + 1)

    def after(self) -> str:
        """The words " after 'X'", naming the previous token (nothing at the start of the text)."""
        return f" after {self.source(self.previous)!r}" if self.previous is not None else ""

    # -- expressions --------------------------------------------------------------------------------

    def parse(self) -> Filter:
        if self.is_word("where"):
            self.advance()
        stack: list[_Pending] = []
        while True:
            self._open_groups(stack)
            node: Filter = self._comparison()
            node = self._close(stack, node)
            if self.token.kind == "end":
                return node
            if self.is_word("and") or self.is_op("&&"):
                if stack and stack[-1].kind == "and":
                    node = And(_left(stack.pop()), node)
                self._push(stack, "and", node)
            else:
                self._push(stack, "or", _fold(stack, node))

    def _push(self, stack: list[_Pending], kind: str, left: Filter | None = None) -> None:
        """Consume the operator token and put it on the stack, refusing trees deeper than MAX_NESTING."""
        depth = (stack[-1].depth if stack else 0) + (kind != "(")
        if depth > MAX_NESTING:
            raise self.fail(
                f"filter nested more than {MAX_NESTING} levels deep (NOT, AND and OR waiting for their "
                f"right side); the limit is {MAX_NESTING}"
            )
        stack.append(_Pending(kind, self.advance(), left, depth))

    def _open_groups(self, stack: list[_Pending]) -> None:
        """Push every "(" and NOT in front of the next comparison."""
        while self.is_op("(") or self.is_op("!") or self.is_word("not"):
            self._push(stack, "(" if self.is_op("(") else "not")

    def _close(self, stack: list[_Pending], node: Filter) -> Filter:
        """Apply pending NOTs and closing parentheses after an operand; stop before AND, OR or the end."""
        while True:
            while stack and stack[-1].kind == "not":
                stack.pop()
                node = Not(node)
            if self.is_op(")"):
                node = _fold(stack, node)
                if not stack or stack[-1].kind != "(":
                    raise self.fail("')' without a matching '('")
                stack.pop()
                self.advance()
            elif self.token.kind == "end":
                node = _fold(stack, node)
                if stack:
                    opener = stack[-1].token.start + 1
                    raise self.fail(f"missing ')': the '(' in column {opener} is never closed")
                return node
            elif self.is_word("and", "or") or self.is_op("&&") or self.is_op("||"):
                return node
            else:
                closer = "')'" if any(p.kind == "(" for p in stack) else "the end"
                found = self.source(self.token)
                raise self.fail(f"expected AND, OR or {closer}{self.after()}, got {found!r}")

    # -- comparisons --------------------------------------------------------------------------------

    def _comparison(self) -> Comparison:
        self.comparisons += 1
        if self.comparisons > MAX_COMPARISONS:
            raise self.fail(
                f"filter holds more than {MAX_COMPARISONS} comparisons; the limit is {MAX_COMPARISONS}"
            )
        key_token = self._key()
        op = self._operator()
        value: Scalar | tuple[Scalar, ...] | None = None
        if op.takes_list:
            value = self._list()
        elif not op.takes_no_value:
            value = self._value()
        try:
            return Comparison(str(key_token.value), op, value)
        except FilterError as exc:
            raise self.fail(str(exc), key_token) from None

    def _key(self) -> Token:
        token = self.token
        if token.kind in ("name", "string"):
            return self.advance()
        found = self.source(token)
        if token.kind == "number" or self.is_word("true", "false"):
            raise self.fail(f"expected a key{self.after()}, got the value {found!r}: write the key first")
        if token.kind == "end" and self.previous is None:
            raise self.fail("empty filter")
        if token.kind == "keyword" and token.value not in _CONNECTIVES:
            raise self.fail(f"expected a comparison{self.after()}, got the keyword {found!r} (quote keys)")
        if token.kind == "end" or self.previous is not None:
            raise self.fail(f"expected a comparison{self.after()}")
        raise self.fail(f"expected a comparison, got {found!r}")

    def _operator(self) -> Op:
        token = self.token
        if token.kind == "op" and token.value in _COMPARE:
            self.advance()
            return _COMPARE[str(token.value)]
        if token.kind == "keyword" and token.value in _SIMPLE_WORDS:
            self.advance()
            return _SIMPLE_WORDS[str(token.value)]
        if self.is_word("not"):
            self.advance()
            if self.token.kind == "keyword" and self.token.value in _AFTER_NOT:
                return _AFTER_NOT[str(self.advance().value)]
            raise self.fail(f"expected IN or CONTAINS{self.after()}")
        if self.is_word("is"):
            self.advance()
            negated = self.is_word("not")
            if negated:
                self.advance()
            if not self.is_word("null"):
                raise self.fail(f"expected NULL{self.after()}")
            self.advance()
            return Op.IS_NOT_NULL if negated else Op.IS_NULL
        if token.kind == "name":
            word = self.source(token)
            hint = _NO_PATTERNS if word.upper() in _PATTERN_WORDS else ""
            raise self.fail(f"unknown operator {word!r}{hint}")
        raise self.fail(f"expected an operator{self.after()}")

    def _value(self) -> Scalar:
        token = self.token
        if token.kind in ("string", "number"):
            self.advance()
            return token.value
        if self.is_word("true", "false"):
            self.advance()
            return token.value == "true"
        if token.kind == "name":
            word = self.source(token)
            raise self.fail(f"expected a value{self.after()}, got the unquoted text {word!r}: quote it")
        if self.is_word("null"):
            raise self.fail("NULL is not a value: use IS NULL or IS NOT NULL")
        raise self.fail(f"expected a value{self.after()}")

    def _list(self) -> tuple[Scalar, ...]:
        if not self.is_op("["):
            raise self.fail(f"expected a list such as [1, 2]{self.after()}")
        self.advance()
        if self.is_op("]"):
            raise self.fail("empty list: a list needs at least one value")
        values = [self._value()]
        while not self.is_op("]"):
            if not self.is_op(","):
                raise self.fail(f"expected ',' or ']'{self.after()}")
            self.advance()
            if len(values) == MAX_LIST_VALUES:
                raise self.fail(
                    f"list holds more than {MAX_LIST_VALUES} values; the limit is {MAX_LIST_VALUES}"
                )
            values.append(self._value())
        self.advance()
        return tuple(values)


def _left(pending: _Pending) -> Filter:
    assert pending.left is not None
    return pending.left


def _fold(stack: list[_Pending], node: Filter) -> Filter:
    """Finish the pending AND, then the pending OR, of the current parenthesis level."""
    if stack and stack[-1].kind == "and":
        node = And(_left(stack.pop()), node)
    if stack and stack[-1].kind == "or":
        node = Or(_left(stack.pop()), node)
    return node


def parse(text: str) -> Filter:
    """Parse filter text (docs/filters.md) into a tree.

    Text past the size limits (`MAX_FILTER_LENGTH` characters, `MAX_COMPARISONS` comparisons,
    `MAX_LIST_VALUES` values in one list) is refused, so no input keeps a caller busy for long.

    Raises:
        FilterSyntaxError: the text does not parse, or passes a size limit (the message names it and
            points at the column).
        FilterError: `text` is not a string.
    """
    if not isinstance(text, str):
        raise FilterError(f"filter text must be a str, got {text!r}")
    if len(text) > MAX_FILTER_LENGTH:
        reason = f"filter text is {len(text)} characters long; the limit is {MAX_FILTER_LENGTH}"
        raise FilterSyntaxError(reason, text, MAX_FILTER_LENGTH + 1)
    if not text.strip():
        raise FilterSyntaxError("empty filter", text, 1)
    return _Parser(text).parse()


def as_filter(value: str | Filter | None) -> Filter | None:
    """A tree from text (parsed), a tree (as it is) or None (no filter)."""
    if value is None or isinstance(value, Comparison | And | Or | Not):
        return value
    if isinstance(value, str):
        return parse(value)
    raise FilterError(f"a filter must be text or a filter tree, got {value!r}")
