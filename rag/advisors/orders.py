"""Where an advisor runs: the `Advisor` protocol (`name`, `order`), the order constants, the sort.

Orders are integers from `HIGHEST_PRECEDENCE` to `LOWEST_PRECEDENCE`; lower runs first on the way in and
last on the way out; ties keep registration order (the sort is stable). The model call is not an advisor:
it sits at `MODEL_CALL_ORDER`, and an order beyond `LOWEST_PRECEDENCE` is an `InvalidRequestError`, since
nothing can run after the model.

| constant                 | value                     | used by                                      |
|--------------------------|---------------------------|----------------------------------------------|
| `SAFEGUARD_ORDER`        | HIGHEST_PRECEDENCE + 100  | SafeGuardAdvisor: block before any work       |
| `CHAT_MEMORY_ORDER`      | HIGHEST_PRECEDENCE + 1000 | chat memory advisors                         |
| `QUESTION_ANSWER_ORDER`  | 0 (DEFAULT_ORDER)         | QuestionAnswerAdvisor                        |
| `TOOL_CALLING_ORDER`     | LOWEST_PRECEDENCE - 2000  | tool calling: advisors after it run per round |
| `LOGGER_ORDER`           | LOWEST_PRECEDENCE - 1000  | SimpleLoggerAdvisor: sees the final prompt    |

Example:
    >>> from rag.advisors import BaseAdvisor
    >>> [a.name for a in sort_advisors([BaseAdvisor(name="late", order=5), BaseAdvisor(name="early")])]
    ['early', 'late']
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, runtime_checkable

from rag.errors import InvalidRequestError

__all__ = [
    "CHAT_MEMORY_ORDER",
    "DEFAULT_ORDER",
    "HIGHEST_PRECEDENCE",
    "LOGGER_ORDER",
    "LOWEST_PRECEDENCE",
    "MODEL_CALL_ORDER",
    "QUESTION_ANSWER_ORDER",
    "SAFEGUARD_ORDER",
    "TOOL_CALLING_ORDER",
    "Advisor",
    "advisor_name",
    "order_of",
    "sort_advisors",
]

HIGHEST_PRECEDENCE = -(2**31)
"""The smallest order: runs first on the way in, last on the way out."""
LOWEST_PRECEDENCE = 2**31 - 1
"""The largest order an advisor may have: the last advisor before the model call."""
MODEL_CALL_ORDER = LOWEST_PRECEDENCE + 1
"""Where the terminal model call sits; reserved, no advisor may take it or go beyond it."""
DEFAULT_ORDER = 0
"""The order of an advisor that does not choose one."""

SAFEGUARD_ORDER = HIGHEST_PRECEDENCE + 100
CHAT_MEMORY_ORDER = HIGHEST_PRECEDENCE + 1000
QUESTION_ANSWER_ORDER = DEFAULT_ORDER
TOOL_CALLING_ORDER = LOWEST_PRECEDENCE - 2000
LOGGER_ORDER = LOWEST_PRECEDENCE - 1000


@runtime_checkable
class Advisor(Protocol):
    """What every advisor has: a `name` (for errors, logs and timings) and an `order`."""

    @property
    def name(self) -> str: ...

    @property
    def order(self) -> int: ...


def advisor_name(advisor: object) -> str:
    """An advisor's `name`, or its class name when it has none."""
    name = getattr(advisor, "name", None)
    return name if isinstance(name, str) and name else type(advisor).__name__


def order_of(advisor: object) -> int:
    """An advisor's `order` (`DEFAULT_ORDER` when it has none), checked to be an int in range."""
    order = getattr(advisor, "order", DEFAULT_ORDER)
    if isinstance(order, bool) or not isinstance(order, int):
        raise InvalidRequestError(f"advisor {advisor_name(advisor)!r} has order {order!r}; it must be an int")
    if not HIGHEST_PRECEDENCE <= order <= LOWEST_PRECEDENCE:
        raise InvalidRequestError(
            f"advisor {advisor_name(advisor)!r} has order {order!r}, outside HIGHEST_PRECEDENCE.."
            f"LOWEST_PRECEDENCE ({HIGHEST_PRECEDENCE}..{LOWEST_PRECEDENCE}); the model call is the reserved "
            "last step and no advisor can run after it"
        )
    return order


def sort_advisors(advisors: Iterable[Advisor]) -> tuple[Advisor, ...]:
    """The advisors by `order`, ties in the order given. Raises `InvalidRequestError` on a bad order."""
    items = list(advisors)
    orders = [order_of(advisor) for advisor in items]
    ranked = sorted(range(len(items)), key=orders.__getitem__)  # sorted() is stable: ties keep their order
    return tuple(items[i] for i in ranked)
