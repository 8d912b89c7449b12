"""From a Python signature to a pydantic arguments model and the JSON schema the model is shown.

Parameter descriptions come from `Annotated[T, "text"]` (or `Annotated[T, Field(description=...)]`) and,
failing that, from the `Args:` section of a Google-style docstring.

Example:
    >>> from typing import Annotated
    >>> def area(width: float, height: Annotated[float, "in metres"] = 1.0) -> float:
    ...     '''Area of a rectangle.
    ...
    ...     Args:
    ...         width: in metres too.
    ...     '''
    ...     return width * height
    >>> spec = build_signature_spec(area, "area")
    >>> spec.schema["properties"]["height"]
    {'default': 1.0, 'description': 'in metres', 'type': 'number'}
    >>> spec.schema["required"], spec.summary
    (['width'], 'Area of a rectangle.')
"""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

import pydantic
from pydantic import ConfigDict, Field

from rag.errors import ToolError
from rag.tools.context import ToolContext

__all__ = ["SignatureSpec", "build_signature_spec", "parse_docstring"]

_SECTION = re.compile(r"^\s*(Args|Arguments|Parameters|Returns?|Raises|Yields|Examples?|Notes?):\s*$")
_ARG_LINE = re.compile(r"^(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


@dataclass(frozen=True)
class SignatureSpec:
    """What a function's signature tells about it as a tool.

    `model` validates the arguments the model may give; `context_param` names the injected `ToolContext`
    parameter (None when there is none); `schema` is the JSON schema shown to the model.
    """

    model: type[pydantic.BaseModel]
    schema: dict[str, Any]
    context_param: str | None
    summary: str


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """The description (text before the first section) and the `Args:` descriptions of a docstring."""
    lines = inspect.cleandoc(doc or "").splitlines()
    summary: list[str] = []
    args: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    arg_indent = 0
    for line in lines:
        heading = _SECTION.match(line)
        if heading:
            section, current = heading.group(1), None
            continue
        if section is None:
            summary.append(line)
        elif section in ("Args", "Arguments", "Parameters") and line.strip():
            indent = len(line) - len(line.lstrip())
            match = _ARG_LINE.match(line.strip())
            if match and (current is None or indent <= arg_indent):
                current, arg_indent = match.group(1).lstrip("*"), indent
                args[current] = match.group(2).strip()
            elif current is not None:  # a continuation line of the current argument
                args[current] = f"{args[current]} {line.strip()}".strip()
    return "\n".join(summary).strip(), args


def _describe(annotation: Any, doc_description: str | None) -> Any:
    """The annotation with plain-string `Annotated` metadata turned into a pydantic field description."""
    description = doc_description
    extras: list[Any] = []
    if typing.get_origin(annotation) is Annotated:
        base, *metadata = typing.get_args(annotation)
        for item in metadata:
            if isinstance(item, str):
                description = item  # the annotation is closer to the code than the docstring: it wins
            else:
                extras.append(item)
        annotation = base
    if description:
        extras.append(Field(description=description))
    return Annotated[(annotation, *extras)] if extras else annotation


def _is_context(annotation: Any) -> bool:
    if typing.get_origin(annotation) is Annotated:
        annotation = typing.get_args(annotation)[0]
    return annotation is ToolContext


def _tidy(schema: dict[str, Any]) -> dict[str, Any]:
    # pydantic's generated titles ("City", "get_weather_args") only add tokens the model has to read.
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        if isinstance(prop, dict):
            prop.pop("title", None)
    schema.setdefault("properties", {})
    return schema


def build_signature_spec(
    func: Callable[..., Any], tool_name: str, *, skip_first: bool = False
) -> SignatureSpec:
    """Inspect `func` (skipping its first parameter when `skip_first`, for `self`) into a `SignatureSpec`.

    Raises:
        ToolError: a parameter without a type hint, a `*args`/`**kwargs` parameter, or hints that do not
            resolve or that pydantic cannot turn into a schema.
    """
    try:
        signature = inspect.signature(func)
        # ToolContext resolves even where it was imported inside a function (string annotations).
        hints = typing.get_type_hints(func, localns={"ToolContext": ToolContext}, include_extras=True)
    except (NameError, TypeError, ValueError) as exc:
        raise ToolError(
            f"cannot read the type hints of tool {tool_name!r}: {exc} (types named in hints must be "
            "importable from the function's module, not local to another function)"
        ) from exc
    summary, arg_docs = parse_docstring(inspect.getdoc(func))
    fields: dict[str, Any] = {}
    context_param: str | None = None
    params = list(signature.parameters.values())[1 if skip_first else 0 :]
    for param in params:
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ToolError(
                f"tool {tool_name!r} has a variadic parameter {param.name!r}; name every parameter"
            )
        if param.name not in hints:
            raise ToolError(
                f"parameter {param.name!r} of tool {tool_name!r} has no type hint; the model needs one to "
                "know what to send"
            )
        annotation = hints[param.name]
        if _is_context(annotation):
            context_param = param.name
            continue
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (_describe(annotation, arg_docs.get(param.name)), default)
    try:
        model = pydantic.create_model(
            f"{tool_name}_arguments", __config__=ConfigDict(extra="forbid"), **fields
        )
        schema = _tidy(model.model_json_schema())
    except (pydantic.PydanticSchemaGenerationError, pydantic.PydanticUserError, TypeError) as exc:
        raise ToolError(
            f"cannot build a JSON schema for the parameters of tool {tool_name!r}: {exc}"
        ) from exc
    return SignatureSpec(model, schema, context_param, summary)
