"""`@tool`: a typed Python function (or method) becomes a `Tool` the model can call.

Example:
    >>> from typing import Annotated
    >>> @tool
    ... def get_weather(city: Annotated[str, "City name, e.g. Paris"], unit: str = "C") -> str:
    ...     '''Current weather in a city.'''
    ...     return f"18 {unit} and sunny in {city}"
    >>> get_weather.definition.name, get_weather.definition.description
    ('get_weather', 'Current weather in a city.')
    >>> get_weather.invoke({"city": "Paris"})
    '18 C and sunny in Paris'
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import re
import types
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, overload

import pydantic
import pydantic_core

from rag.chat.messages import ToolDefinition
from rag.errors import ToolError
from rag.tools.context import ToolContext
from rag.tools.schema import SignatureSpec, build_signature_spec

__all__ = ["Tool", "result_text", "tool"]

_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def _run_coroutine(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """Run a coroutine to completion from sync code, even when this thread already runs an event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    # asyncio.run refuses to nest in a running loop: give the coroutine a loop of its own in another thread.
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def result_text(value: Any) -> str:
    """A tool's return value as the text the model reads: strings as is, anything else as JSON."""
    if isinstance(value, str):
        return value
    try:
        return pydantic_core.to_json(value).decode("utf-8")
    except pydantic_core.PydanticSerializationError:
        return repr(value)  # an object JSON cannot express: its repr still tells the model something


class Tool:
    """A callable the model may call: its `definition` (name, description, parameters schema) and code.

    Build one with `@tool` or `tool(func, name=..., description=..., return_direct=...)`. Calling the tool
    object calls the function unchanged; `invoke(arguments, context)` validates model-given arguments first.
    Decorating a method makes a tool per instance (`obj.method` is a bound `Tool`); `.tools(obj)` offers
    every `@tool` method of `obj` at once (see `rag.tools.tools_from`).

    Example:
        >>> class Shop:
        ...     def __init__(self) -> None:
        ...         self.stock = {"apple": 3}
        ...     @tool
        ...     def count(self, item: str) -> int:
        ...         '''How many of an item are in stock.'''
        ...         return self.stock.get(item, 0)
        >>> Shop().count.invoke({"item": "apple"})
        3
    """

    def __init__(
        self,
        func: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        return_direct: bool = False,
    ) -> None:
        if not callable(func):
            raise ToolError(f"a tool needs a callable, got {func!r}")
        self.func = func
        self.name = name or getattr(func, "__name__", "") or type(func).__name__
        if not _NAME.fullmatch(self.name):
            raise ToolError(f"tool name {self.name!r} is not allowed: use 1-64 letters, digits, '_' or '-'")
        self.return_direct = return_direct
        self._description = description
        self._unbound = _looks_unbound_method(func)
        self._spec: SignatureSpec = build_signature_spec(func, self.name, skip_first=self._unbound)
        text = description if description is not None else self._spec.summary
        if not text:
            raise ToolError(
                f"tool {self.name!r} has no description: give the function a docstring or pass description="
            )
        self.definition = ToolDefinition(self.name, text, self._spec.schema)
        self.__doc__ = getattr(func, "__doc__", None)

    @property
    def description(self) -> str:
        return self.definition.description

    @property
    def arguments_model(self) -> type[pydantic.BaseModel]:
        """The pydantic model that validates the model's arguments."""
        return self._spec.model

    @property
    def needs_instance(self) -> bool:
        """True for a method tool read from its class: it takes `self`, so only an instance can run it."""
        return self._unbound

    @property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self.func)

    def __set_name__(self, owner: type, attr: str) -> None:
        self._attr = attr

    def __get__(self, instance: object, owner: type | None = None) -> Tool:
        if instance is None or not self._unbound:
            return self
        bound = Tool(
            types.MethodType(self.func, instance),
            name=self.name,
            description=self._description if self._description is not None else self.definition.description,
            return_direct=self.return_direct,
        )
        attr = getattr(self, "_attr", None)
        if attr is not None and hasattr(instance, "__dict__"):
            instance.__dict__[attr] = bound  # built once per instance: later lookups find it first
        return bound

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        result = self.func(*args, **kwargs)
        return _run_coroutine(result) if inspect.iscoroutine(result) else result

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The arguments validated and converted to the parameter types.

        Raises:
            pydantic.ValidationError: what is wrong, one line per problem.
        """
        validated = self._spec.model.model_validate(dict(arguments))
        return {name: getattr(validated, name) for name in type(validated).model_fields}

    def invoke(self, arguments: Mapping[str, Any], context: ToolContext | None = None) -> Any:
        """Validate `arguments`, inject the `ToolContext` if the function takes one, run, return the value.

        Raises:
            pydantic.ValidationError: the arguments do not fit the schema.
        """
        kwargs = self.validate(arguments)
        if self._spec.context_param is not None:
            kwargs[self._spec.context_param] = context if context is not None else ToolContext()
        return self(**kwargs)

    def __repr__(self) -> str:
        return f"Tool(name={self.name!r}, return_direct={self.return_direct!r})"


def _looks_unbound_method(func: Callable[..., Any]) -> bool:
    # A function defined in a class body is decorated before the class exists: recognise `self` by name.
    if inspect.ismethod(func) or not inspect.isfunction(func):
        return False
    params = list(inspect.signature(func).parameters)
    return bool(params) and params[0] in ("self", "cls") and "." in func.__qualname__


@overload
def tool(func: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    func: None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    return_direct: bool = False,
) -> Callable[[Callable[..., Any]], Tool]: ...


@overload
def tool(
    func: Callable[..., Any],
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    return_direct: bool = False,
) -> Tool: ...


def tool(
    func: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    return_direct: bool = False,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a `Tool` of a typed function: `@tool`, `@tool(return_direct=True)` or `tool(func, name=...)`.

    The name defaults to the function's, the description to its docstring's text before the first section;
    parameter descriptions come from `Annotated[T, "text"]` or the docstring's `Args:`. A parameter typed
    `ToolContext` is injected at run time and hidden from the model. Async functions are run to completion.

    Example:
        >>> @tool(return_direct=True)
        ... def shout(text: str) -> str:
        ...     '''Upper-case the text.
        ...
        ...     Args:
        ...         text: what to shout.
        ...     '''
        ...     return text.upper()
        >>> shout.return_direct, shout.definition.parameters["properties"]["text"]["description"]
        (True, 'what to shout.')

    Raises:
        ToolError: the function has an untyped or variadic parameter, or no description.
    """

    def wrap(function: Callable[..., Any]) -> Tool:
        return Tool(function, name=name, description=description, return_direct=return_direct)

    return wrap if func is None else wrap(func)
