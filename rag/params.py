"""Typed per-request parameters: each advisor declares a frozen `Params` class, the request carries them.

An advisor that can be tuned per request declares a nested frozen dataclass deriving from
`AdvisorParams`, such as `QuestionAnswerAdvisor.Params(top_k=3)`. Every field defaults to None, which
means "not set: keep the advisor's own default". The chat client carries them in a `ParamSet`, keyed by
their class, without knowing any field; each advisor looks up its own class.

Building one checks everything at once: an unknown field, a positional argument or a bad value raises
`InvalidRequestError` naming the class (and the field), before any request runs.

Example:
    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True, slots=True, kw_only=True)
    ... class Limit(AdvisorParams):
    ...     top_k: int | None = None
    >>> ParamSet([Limit(top_k=2)]).get(Limit)
    Limit(top_k=2)
    >>> Limit(topk=2)
    Traceback (most recent call last):
    ...
    rag.errors.InvalidRequestError: Limit has no field 'topk' (did you mean 'top_k'?); its fields are top_k
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, ClassVar, TypeVar

from rag.errors import InvalidRequestError

__all__ = ["AdvisorParams", "ParamSet", "closest", "did_you_mean"]

P = TypeVar("P", bound="AdvisorParams")


def closest(name: str, choices: Iterable[str]) -> str | None:
    """The one of `choices` closest to `name` (a likely typo of it), or None when none is close."""
    close = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.6)
    return close[0] if close else None


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """` (did you mean 'x'?)` for the closest of `choices`, or "" when none is close."""
    close = closest(name, choices)
    return f" (did you mean {close!r}?)" if close else ""


class AdvisorParams:
    """Base of the per-request parameter classes: keyword-only, unknown names refused with their name.

    Subclasses are `@dataclass(frozen=True, slots=True, kw_only=True)` with every field defaulting to
    None. `aliases` maps other names (Spring AI's, such as `qa_filter_expression`) to a field; see
    `rag.advisors.aliases`.
    """

    __slots__ = ()

    aliases: ClassVar[Mapping[str, str]] = {}
    """Spring AI parameter names that set a field of this class (name -> field)."""

    def __new__(cls, *args: Any, **fields: Any) -> AdvisorParams:
        # Runs before the dataclass __init__, so a typo is a RagError naming the class, not a TypeError.
        if args:
            raise InvalidRequestError(
                f"{cls.__qualname__} takes keyword arguments only, got {len(args)} positional: "
                f"write {cls.__qualname__}({', '.join(f'{n}=...' for n in cls.field_names()[:2])})"
            )
        for name in fields:
            if name not in cls.field_names():
                raise InvalidRequestError(
                    f"{cls.__qualname__} has no field {name!r}{did_you_mean(name, cls.field_names())}; "
                    f"its fields are {', '.join(cls.field_names())}"
                )
        return super().__new__(cls)

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        """The names of the fields, in declaration order."""
        return tuple(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]

    def given(self) -> dict[str, Any]:
        """The fields that are set (not None), by name."""
        return {name: getattr(self, name) for name in self.field_names() if getattr(self, name) is not None}

    def merged(self: P, other: P) -> P:
        """These parameters with every field `other` sets taking its value (`other` wins)."""
        return dataclasses.replace(self, **other.given())  # type: ignore[type-var]

    def fail(self, field: str, problem: str) -> InvalidRequestError:
        """The error for a bad value of `field`, naming the class and the field (for `__post_init__`)."""
        return InvalidRequestError(f"{type(self).__qualname__}({field}=...): {problem}")


class ParamSet:
    """The parameters of one request: at most one object per `AdvisorParams` class, looked up by class.

    Adding parameters of a class already present merges them field by field, the newer winning: client
    defaults first, then each `.advisors(...)` call of the request.

    Example:
        >>> from rag.advisors import QuestionAnswerAdvisor
        >>> QA = QuestionAnswerAdvisor.Params
        >>> merged = ParamSet([QA(top_k=8, mode="vector")]).with_params([QA(top_k=2)])
        >>> merged.get(QA).top_k, merged.get(QA).mode
        (2, 'vector')
    """

    __slots__ = ("_items",)

    def __init__(self, params: Iterable[AdvisorParams] = ()) -> None:
        self._items: dict[type[AdvisorParams], AdvisorParams] = {}
        self._add(params)

    def _add(self, params: Iterable[AdvisorParams]) -> None:
        for item in params:
            if not isinstance(item, AdvisorParams):
                raise InvalidRequestError(f"{item!r} is not an advisor's Params (an AdvisorParams object)")
            kind = type(item)
            known = self._items.get(kind)
            self._items[kind] = item if known is None else known.merged(item)

    def with_params(self, params: Iterable[AdvisorParams]) -> ParamSet:
        """A new set with `params` added (merged over the ones of the same class)."""
        merged = ParamSet(self._items.values())
        merged._add(params)
        return merged

    def get(self, kind: type[P]) -> P | None:
        """The parameters of class `kind`, or None when the request has none."""
        found = self._items.get(kind)
        return found if isinstance(found, kind) else None

    def __iter__(self) -> Iterator[AdvisorParams]:
        return iter(self._items.values())

    def __len__(self) -> int:
        return len(self._items)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ParamSet) and self._items == other._items

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"ParamSet({list(self._items.values())!r})"
