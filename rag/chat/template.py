"""`PromptTemplate`: text with named `{placeholders}`, rendered without ever parsing the values.

The template is parsed once into literal pieces and placeholder names. Rendering joins the pieces with the
values' `str()`, so a value that contains braces (JSON, code, a retrieved document) passes through untouched;
`str.format` is never applied to user data.

Syntax: `{name}` is a placeholder (a Python identifier, optionally padded with spaces: `{ name }`);
`{{` and `}}` are literal braces; any other brace is a `TemplateError`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from rag.errors import TemplateError

__all__ = ["PromptTemplate"]

# One token at a time: an escaped brace, a placeholder, a lone brace (an error), or a run of plain text.
_TOKEN = re.compile(r"\{\{|\}\}|\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}|([{}])|[^{}]+")
_SHOWN_CHARS = 120


def _shorten(text: str) -> str:
    """The template as quoted in error messages: long ones are cut so the message stays readable."""
    return text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS] + "..."


class PromptTemplate:
    """Text with named `{placeholders}`; `{{` and `}}` stand for literal braces.

    Example:
        >>> t = PromptTemplate("Answer {question} using:\\n{context}")
        >>> t.variables
        ('question', 'context')
        >>> t.render(question="why?", context='{"json": "kept as is"}')
        'Answer why? using:\\n{"json": "kept as is"}'
        >>> PromptTemplate("{{literal}} {x}").render({"x": 1})
        '{literal} 1'
    """

    __slots__ = ("_parts", "_template", "_variables")

    def __init__(self, template: str) -> None:
        if not isinstance(template, str):
            raise TemplateError(f"a prompt template must be a str, got {template!r}")
        self._template = template
        # Even indexes hold literal text, odd indexes hold placeholder names.
        self._parts: tuple[str, ...] = tuple(self._parse(template))
        names = self._parts[1::2]
        self._variables: tuple[str, ...] = tuple(dict.fromkeys(names))

    @staticmethod
    def _parse(template: str) -> list[str]:
        parts: list[str] = [""]
        for match in _TOKEN.finditer(template):
            name, lone = match.group(1), match.group(2)
            if lone is not None:
                column = match.start() + 1
                raise TemplateError(
                    f"unmatched {lone!r} at column {column} of prompt template {_shorten(template)!r}; "
                    f"write {lone * 2!r} for a literal brace or {{name}} for a placeholder"
                )
            if name is not None:
                parts.extend((name, ""))
            else:
                token = match.group(0)
                parts[-1] += token[0] if token in ("{{", "}}") else token
        return parts

    @property
    def template(self) -> str:
        """The template text as given."""
        return self._template

    @property
    def variables(self) -> tuple[str, ...]:
        """The placeholder names, in order of first appearance, without duplicates."""
        return self._variables

    def render(self, mapping: Mapping[str, Any] | None = None, /, **variables: Any) -> str:
        """The text with every placeholder replaced by `str(value)`.

        Values come from `mapping` and keyword arguments (keywords win). Extra values are ignored.

        Raises:
            TemplateError: a placeholder has no value; the message names it and the template.
        """
        values = {**mapping, **variables} if mapping is not None else variables
        missing = [name for name in self._variables if name not in values]
        if missing:
            names = ", ".join(repr(name) for name in missing)
            plural = "s" if len(missing) > 1 else ""
            raise TemplateError(
                f"missing value{plural} for {names} in prompt template {_shorten(self._template)!r}"
            )
        pieces = list(self._parts)
        for i in range(1, len(pieces), 2):
            pieces[i] = str(values[pieces[i]])
        return "".join(pieces)

    def partial(self, mapping: Mapping[str, Any] | None = None, /, **variables: Any) -> PromptTemplate:
        """A new template with some placeholders filled in; their values' braces are escaped."""
        values = {**mapping, **variables} if mapping is not None else variables
        out: list[str] = []
        for i, part in enumerate(self._parts):
            if i % 2 == 0:
                out.append(_escape(part))
            elif part in values:
                out.append(_escape(str(values[part])))
            else:
                out.append("{" + part + "}")
        return PromptTemplate("".join(out))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PromptTemplate) and other._template == self._template

    def __hash__(self) -> int:
        return hash(self._template)

    def __repr__(self) -> str:
        return f"PromptTemplate({_shorten(self._template)!r})"


def _escape(text: str) -> str:
    return re.sub(r"([{}])", r"\1\1", text)
