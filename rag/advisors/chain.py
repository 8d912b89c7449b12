"""The advisor chain: advisors sorted by `order`, then the model call as the reserved last step.

A chain is a position in an ordered list of advisors. `next_call(request)` runs the advisor at that
position, handing it the chain positioned after it; past the last advisor sits the terminal step, which
calls the model. Positions are immutable, so `chain.copy(after=advisor)` is simply the position after
`advisor`: running it again re-runs every advisor behind `advisor` and the model (tool loops, retries).

Advisors run by `order` (see `rag.advisors.orders`); the model call is the reserved last step.

Example:
    >>> from rag.chat import Prompt
    >>> from rag.advisors.request import ChatClientRequest
    >>> from rag.testing import FakeChatModel
    >>> chain = AdvisorChain.build(FakeChatModel(["Hi!"]), [])
    >>> chain.next_call(ChatClientRequest(Prompt("Hello"))).text
    'Hi!'
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from time import perf_counter
from typing import Any, Literal, TypeVar, cast

from rag.advisors.observation import EventKind, Observation, Observer
from rag.advisors.orders import Advisor, advisor_name, order_of, sort_advisors
from rag.advisors.request import OUTPUT_FORMAT, OUTPUT_VALIDATOR, ChatClientRequest
from rag.advisors.response import ChatClientResponse
from rag.advisors.stream_step import StreamStep, StreamSummary
from rag.chat.messages import AssistantMessage, ChatResponse, Prompt, UserMessage
from rag.chat.model import ChatModel
from rag.errors import InvalidRequestError
from rag.observability.hub import StepSpan
from rag.observability.steps import advisor_span, end_model_span, model_span

__all__ = ["AdvisorChain", "CallStep", "ChainPosition", "final_prompt", "retry_prompt"]

_RETRY_FEEDBACK = (
    "Your previous reply could not be used: {problem}\n"
    "Reply again with only the corrected output, following the required format exactly."
)


def _check_capability(advisors: Sequence[Advisor], mode: Literal["call", "stream"]) -> None:
    method = "advise_call" if mode == "call" else "advise_stream"
    for advisor in advisors:
        if not callable(getattr(advisor, method, None)):
            supported = "streams" if mode == "call" else "calls"
            raise InvalidRequestError(
                f"advisor {advisor_name(advisor)!r} ({type(advisor).__name__}) supports only {supported}: it "
                f"has no {method}(); remove it from {mode} requests or implement {method}"
            )


class _Core:
    """What every position of one chain shares."""

    __slots__ = ("advisors", "model", "names", "observation", "orders")

    def __init__(self, advisors: tuple[Advisor, ...], model: ChatModel, observation: Observation) -> None:
        self.advisors = advisors
        self.names = tuple(advisor_name(advisor) for advisor in advisors)
        self.orders = tuple(order_of(advisor) for advisor in advisors)
        self.model = model
        self.observation = observation


Self = TypeVar("Self", bound="ChainPosition")


def final_prompt(request: ChatClientRequest) -> Prompt:
    """The prompt the model receives: structured-output instructions appended at the very end, if any."""
    prompt = request.prompt
    output_format = request.context.get(OUTPUT_FORMAT)
    if output_format:
        prompt = prompt.augment_user(f"{prompt.user_text}\n\n{output_format}")
    return prompt


def retry_prompt(prompt: Prompt, reply: ChatResponse, problem: str) -> Prompt:
    """The prompt of the one corrective retry after an invalid structured reply."""
    feedback = UserMessage(_RETRY_FEEDBACK.replace("{problem}", problem))
    return prompt.with_messages([*prompt.messages, AssistantMessage(reply.text), feedback])


class CallStep:
    """One timed step of a call (an advisor's turn or a model call), sync or async alike.

    Inside the `with` block the step's span is current and its clock runs; on leaving, its own time
    (without the steps nested in it) and any error are reported once, and a model step's span gets the
    reply's attributes (set `response` inside the block).
    """

    __slots__ = ("kind", "name", "observation", "response", "saved", "span", "start", "token")

    def __init__(self, observation: Observation, kind: EventKind, name: str, span: StepSpan | None) -> None:
        self.observation, self.kind, self.name, self.span = observation, kind, name, span
        self.response: ChatResponse | None = None

    def __enter__(self) -> CallStep:
        self.token = self.span.attach() if self.span is not None else None
        self.saved = self.observation.enter()
        self.start = perf_counter()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: object) -> None:
        elapsed = perf_counter() - self.start
        own = self.observation.leave(self.saved, elapsed)
        span = self.span
        if span is not None:
            span.detach(self.token)
        if self.kind == "model":
            usage = self.response.usage if self.response is not None else None
            if span is not None:
                end_model_span(span, self.response, elapsed, error)
            self.observation.record("model", self.name, own, usage=usage, error=error)
        else:
            self.observation.record(self.kind, self.name, own, error=error, span=span)


class ChainPosition:
    """What the sync and async chains share: one request's ordered advisors and a position in them.

    `build` sorts the advisors and checks they can run in the mode; `copy(after=advisor)` repositions.
    `AdvisorChain` and `rag.advisors.achain.AsyncAdvisorChain` add how a step runs.
    """

    __slots__ = ("_core", "_index")

    def __init__(self, core: _Core, index: int = 0) -> None:
        self._core = core
        self._index = index

    @classmethod
    def build(
        cls: type[Self],
        model: ChatModel,
        advisors: Iterable[Advisor],
        *,
        mode: Literal["call", "stream"] = "call",
        context: dict[str, Any] | None = None,
        observer: Observer | None = None,
    ) -> Self:
        """A chain over `advisors` sorted by order, checked to support `mode`, positioned at the start.

        Timings and usage go into `context`, or else into the context of the first request the chain runs.

        Raises:
            InvalidRequestError: an order out of range, or an advisor that cannot run in `mode`.
        """
        ordered = sort_advisors(advisors)
        cls._check_capability(ordered, mode)
        observation = Observation(context, observer, mode)
        return cls(_Core(ordered, model, observation))

    @staticmethod
    def _check_capability(advisors: Sequence[Advisor], mode: Literal["call", "stream"]) -> None:
        """Refuse an advisor that cannot run in `mode` (async chains also accept async-only advisors)."""
        _check_capability(advisors, mode)

    # -- inspection --------------------------------------------------------------------------------

    @property
    def advisors(self) -> tuple[Advisor, ...]:
        """Every advisor of the chain, in running order."""
        return self._core.advisors

    @property
    def names(self) -> tuple[str, ...]:
        """The names of every advisor, in running order."""
        return self._core.names

    @property
    def remaining(self) -> tuple[Advisor, ...]:
        """The advisors still to run from this position (the model call follows them)."""
        return self._core.advisors[self._index :]

    @property
    def model(self) -> ChatModel:
        return self._core.model

    @property
    def observation(self) -> Observation:
        return self._core.observation

    def copy(self: Self, *, after: Advisor) -> Self:
        """The chain positioned right after `after`: running it re-runs the advisors behind it and the model.

        Raises:
            InvalidRequestError: `after` is not in this chain.
        """
        advisors = self._core.advisors
        # Search backwards from here first: an advisor registered twice means the nearest one.
        for i in (*range(self._index - 1, -1, -1), *range(self._index, len(advisors))):
            if advisors[i] is after:
                return type(self)(self._core, i + 1)
        raise InvalidRequestError(
            f"advisor {advisor_name(after)!r} is not in this chain; it holds {list(self._core.names)!r}"
        )


class AdvisorChain(ChainPosition):
    """A position in the ordered advisors of one request; past the last one, the model call.

    Build one with `AdvisorChain.build(model, advisors)`; advisors receive the chain positioned after
    themselves and call `chain.next_call(request)` (or `next_stream`) to go on.

    Example:
        >>> from rag.advisors import BaseAdvisor
        >>> from rag.chat import Prompt
        >>> from rag.testing import FakeChatModel
        >>> chain = AdvisorChain.build(FakeChatModel(default="ok"), [BaseAdvisor(name="a")])
        >>> request = ChatClientRequest(Prompt("q"))
        >>> [advisor.name for advisor in chain.remaining], chain.next_call(request).text
        (['a'], 'ok')
    """

    __slots__ = ()

    # -- calls -------------------------------------------------------------------------------------

    def next_call(self, request: ChatClientRequest) -> ChatClientResponse:
        """Run the next advisor (or the model, at the end) and return its response."""
        core, index = self._core, self._index
        observation = core.observation
        if not observation.bound:
            observation.bind(request.context)
        if index >= len(core.advisors):
            return self._call_model(request)
        advisor = core.advisors[index]
        name = core.names[index]
        with CallStep(observation, "advisor", name, advisor_span(name, core.orders[index])):
            response = cast(Any, advisor).advise_call(request, AdvisorChain(core, index + 1))
        if not isinstance(response, ChatClientResponse):
            raise InvalidRequestError(
                f"advisor {core.names[index]!r} returned {response!r} from advise_call; "
                "it must return a ChatClientResponse (did after() forget to return the response?)"
            )
        return response

    def _call_model(self, request: ChatClientRequest) -> ChatClientResponse:
        prompt = final_prompt(request)
        response = self._timed_model_call(prompt)
        validator: Callable[[str], str | None] | None = request.context.get(OUTPUT_VALIDATOR)
        if validator is not None:
            problem = validator(response.text)
            if problem is not None:
                response = self._timed_model_call(retry_prompt(prompt, response, problem))
        return ChatClientResponse(response, request.context)

    def _timed_model_call(self, prompt: Prompt) -> ChatResponse:
        core = self._core
        with CallStep(
            core.observation, "model", "model:call", model_span(core.model, prompt, "call")
        ) as step:
            step.response = core.model.call(prompt)
        return step.response

    # -- streams -----------------------------------------------------------------------------------

    def next_stream(self, request: ChatClientRequest) -> Iterator[ChatClientResponse]:
        """The chunks of the next advisor (or of the model, at the end); lazy: runs on iteration."""
        core, index = self._core, self._index
        if not core.observation.bound:
            core.observation.bind(request.context)
        if index >= len(core.advisors):
            context = request.context

            def model_chunks() -> Iterator[ChatClientResponse]:
                for chunk in core.model.stream(request.prompt):
                    yield ChatClientResponse(chunk, context)

            return self._timed_stream(
                "model",
                "model:stream",
                model_chunks,
                lambda: model_span(core.model, request.prompt, "stream"),
            )
        advisor = core.advisors[index]
        _check_capability([advisor], "stream")  # chains built for calls can still be streamed by hand
        following = AdvisorChain(core, index + 1)
        advise = cast(Any, advisor).advise_stream
        name, order = core.names[index], core.orders[index]
        return self._timed_stream(
            "advisor", name, lambda: advise(request, following), lambda: advisor_span(name, order)
        )

    def _timed_stream(
        self,
        kind: EventKind,
        name: str,
        start_stream: Callable[[], Iterable[ChatClientResponse]],
        open_span: Callable[[], StepSpan | None],
    ) -> Iterator[ChatClientResponse]:
        # `AsyncAdvisorChain._timed_stream` is this loop with await: what they share (StreamStep's
        # bracketing, the summary, the span) lives in StreamStep; the loop itself cannot be shared
        # without running sync streams on an event loop or generating one from the other.
        # Each next() of this step nests the next() calls of the steps after it, as calls do, so the same
        # enter/leave bracketing gives the step's own time; it is summed over the chunks. The step's span
        # is current only inside each next(), never across a yield, so the caller's context stays its own.
        step = StreamStep(self._core.observation, open_span(), StreamSummary() if kind == "model" else None)
        error: BaseException | None = None
        iterator: Iterator[ChatClientResponse] | None = None
        try:
            while True:
                step.resume()
                try:
                    if iterator is None:
                        iterator = iter(start_stream())
                    item = next(iterator)
                except StopIteration:
                    return
                finally:
                    step.pause()
                if step.summary is not None:
                    step.summary.add(item.chat_response)
                yield item
        except GeneratorExit:
            raise  # the caller stopped reading: not a failure of this step
        except BaseException as exc:
            error = exc
            raise
        finally:
            close = getattr(iterator, "close", None)
            if close is not None:
                close()
            step.finish(kind, name, error)
