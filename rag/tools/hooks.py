"""Tool result hooks: `TodoReminderHook` reminds the model to keep its todo list up to date.

A hook receives one round's calls and results and returns the results to send (see `ToolResultHook`).

Example:
    >>> from rag.chat import ToolCall, ToolMessage
    >>> from rag.tools import ToolContext
    >>> hook = TodoReminderHook("todo_write", every=2)
    >>> ctx = ToolContext({})
    >>> calls, results = [ToolCall("1", "search", "{}")], [ToolMessage("1", "search", "found")]
    >>> hook(calls, results, ctx)[0].text
    'found'
    >>> "todo_write" in hook(calls, results, ctx)[0].text
    True
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from rag.chat.messages import ToolCall, ToolMessage
from rag.errors import InvalidRequestError
from rag.tools.context import ToolContext

__all__ = ["TodoReminderHook"]

DEFAULT_REMINDER = (
    "<reminder>You have not updated your todo list in the last {rounds} tool rounds. If your plan or "
    "progress changed, call `{tool}` now to record it; otherwise carry on.</reminder>"
)


class TodoReminderHook:
    """After `every` tool rounds in a row without a call to `todo_tool`, add a reminder to the last result.

    The count lives in the request's context, so it restarts with each user request and never leaks between
    conversations; calling the todo tool resets it.

    Example:
        >>> from rag.tools import ToolCallingManager
        >>> manager = ToolCallingManager(hooks=[TodoReminderHook("todo_write", every=3)])
    """

    def __init__(self, todo_tool: str, *, every: int = 3, reminder: str = DEFAULT_REMINDER) -> None:
        if every < 1:
            raise InvalidRequestError(f"every must be at least 1, got {every!r}")
        self.todo_tool = todo_tool
        self.every = every
        self.reminder = reminder
        self._key = f"rag.todo_reminder.{todo_tool}"

    def __call__(
        self, calls: Sequence[ToolCall], results: Sequence[ToolMessage], context: ToolContext
    ) -> Sequence[ToolMessage]:
        store = context.context
        called = any(call.name == self.todo_tool for call in calls)
        rounds = 0 if called else int(store.get(self._key, 0)) + 1
        if isinstance(store, dict):
            store[self._key] = rounds
        if rounds == 0 or rounds % self.every or not results:
            return results
        last = results[-1]
        note = self.reminder.replace("{rounds}", str(rounds)).replace("{tool}", self.todo_tool)
        return [*results[:-1], dataclasses.replace(last, text=f"{last.text}\n\n{note}")]

    def __repr__(self) -> str:
        return f"TodoReminderHook(todo_tool={self.todo_tool!r}, every={self.every!r})"
