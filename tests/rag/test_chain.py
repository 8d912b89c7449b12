"""The advisor chain: order, ties, the terminal model call, copy(after=...), errors, streaming, timings."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from rag.advisors import LOWEST_PRECEDENCE, BaseAdvisor
from rag.advisors.observation import ObservationEvent
from rag.advisors.orders import HIGHEST_PRECEDENCE
from rag.advisors.request import MODEL_CALLS, TIMINGS, USAGE
from rag.chat import AssistantMessage, ChatOptions, ChatResponse, Prompt, Usage
from rag.client import MODEL_CALL_ORDER, AdvisorChain, ChatClient, ChatClientRequest, ChatClientResponse
from rag.errors import InvalidRequestError, ModelError
from rag.testing import FakeChatModel


class Recorder(BaseAdvisor):
    """Logs `name>` on the way in and `<name` on the way out."""

    def __init__(self, name: str, log: list[str], order: int = 0) -> None:
        super().__init__(order=order, name=name)
        self.log = log

    def before(self, request: ChatClientRequest, chain: AdvisorChain) -> ChatClientRequest:
        self.log.append(f"{self.name}>")
        return request

    def after(self, response: ChatClientResponse, chain: AdvisorChain) -> ChatClientResponse:
        self.log.append(f"<{self.name}")
        return response


class Boom(Exception):
    pass


class FailingAdvisor(Recorder):
    def __init__(self, name: str, log: list[str], where: str, order: int = 0) -> None:
        super().__init__(name, log, order)
        self.where = where

    def before(self, request: ChatClientRequest, chain: AdvisorChain) -> ChatClientRequest:
        super().before(request, chain)
        if self.where == "before":
            raise Boom(self.name)
        return request

    def after(self, response: ChatClientResponse, chain: AdvisorChain) -> ChatClientResponse:
        super().after(response, chain)
        if self.where == "after":
            raise Boom(self.name)
        return response


def test_lower_order_runs_first_in_and_last_out() -> None:
    log: list[str] = []
    advisors = [
        Recorder("late", log, 10),
        Recorder("early", log, -5),
        Recorder("last", log, LOWEST_PRECEDENCE),
    ]
    model = FakeChatModel(default="ok")
    assert ChatClient(model, advisors=advisors).prompt("q").call().content() == "ok"
    assert log == ["early>", "late>", "last>", "<last", "<late", "<early"]


def test_ties_keep_registration_order_client_defaults_first() -> None:
    log: list[str] = []
    client = ChatClient(FakeChatModel(default="ok"), advisors=[Recorder("a", log), Recorder("b", log)])
    client.prompt("q").advisors(Recorder("c", log), Recorder("z", log, HIGHEST_PRECEDENCE)).call().content()
    assert log == ["z>", "a>", "b>", "c>", "<c", "<b", "<a", "<z"]


def test_the_model_call_is_the_reserved_last_step() -> None:
    with pytest.raises(InvalidRequestError, match=r"advisor 'behind'.*order 2147483648.*reserved last step"):
        BaseAdvisor(order=MODEL_CALL_ORDER, name="behind")

    class Plain:  # not a BaseAdvisor: checked when handed to the client
        name = "plain"
        order = MODEL_CALL_ORDER + 5

        def advise_call(self, request: ChatClientRequest, chain: AdvisorChain) -> ChatClientResponse:
            return chain.next_call(request)

    model = FakeChatModel(default="ok")
    with pytest.raises(InvalidRequestError, match="advisor 'plain'"):
        ChatClient(model, advisors=[Plain()])
    with pytest.raises(InvalidRequestError, match="advisor 'plain'"):
        ChatClient(model).prompt("q").advisors(Plain())
    with pytest.raises(InvalidRequestError, match="must be an int"):
        BaseAdvisor(order=True)  # type: ignore[arg-type]
    assert model.prompts == []


def test_the_terminal_step_calls_the_model_with_the_advised_prompt() -> None:
    class Rewrite(BaseAdvisor):
        def before(self, request: ChatClientRequest, chain: AdvisorChain) -> ChatClientRequest:
            assert [a.name for a in chain.remaining] == []  # only the model is left after this one
            return request.with_prompt(request.prompt.augment_user("rewritten"))

    model = FakeChatModel(default="ok")
    chain = AdvisorChain.build(model, [Rewrite()])
    response = chain.next_call(ChatClientRequest(Prompt("original")))
    assert response.text == "ok" and [p.user_text for p in model.prompts] == ["rewritten"]
    assert response.context[MODEL_CALLS] == 1


class RetryOnce(Recorder):
    """Re-runs the rest of the chain once when the reply says "bad"."""

    def advise_call(self, request: ChatClientRequest, chain: AdvisorChain) -> ChatClientResponse:
        self.log.append(f"{self.name}>")
        response = chain.next_call(request)
        if "bad" in response.text:
            response = chain.copy(after=self).next_call(request)
        self.log.append(f"<{self.name}")
        return response


def test_copy_after_reruns_only_the_advisors_behind() -> None:
    log: list[str] = []
    model = FakeChatModel(["bad", "good"])
    advisors = [Recorder("outer", log, -10), RetryOnce("retry", log, 0), Recorder("inner", log, 10)]
    response = ChatClient(model, advisors=advisors).prompt("q").call().response()
    assert response.text == "good"
    assert log == ["outer>", "retry>", "inner>", "<inner", "inner>", "<inner", "<retry", "<outer"]
    assert len(model.prompts) == 2 and response.context[MODEL_CALLS] == 2
    # Usage is summed over both model calls (FakeChatModel counts words: 1 prompt word + 1 reply word each).
    assert response.context[USAGE] == Usage(2, 2, 4)


def test_copy_of_an_advisor_not_in_the_chain_is_an_error() -> None:
    chain = AdvisorChain.build(FakeChatModel(default="ok"), [BaseAdvisor(name="a")])
    with pytest.raises(
        InvalidRequestError, match=r"advisor 'stranger' is not in this chain; it holds \['a'\]"
    ):
        chain.copy(after=BaseAdvisor(name="stranger"))


@pytest.mark.parametrize("mode", ["call", "stream"])
def test_an_exception_in_before_propagates_and_stops_the_chain(mode: str) -> None:
    log: list[str] = []
    model = FakeChatModel(default="ok")
    advisors = [
        Recorder("outer", log, -1),
        FailingAdvisor("failing", log, "before"),
        Recorder("inner", log, 1),
    ]
    spec = ChatClient(model, advisors=advisors).prompt("q")
    with pytest.raises(Boom, match="failing"):
        spec.call().content() if mode == "call" else list(spec.stream().content())
    assert log == ["outer>", "failing>"] and model.prompts == []


@pytest.mark.parametrize("mode", ["call", "stream"])
def test_an_exception_in_after_propagates_past_the_outer_advisors(mode: str) -> None:
    log: list[str] = []
    model = FakeChatModel(default="ok")
    advisors = [
        Recorder("outer", log, -1),
        FailingAdvisor("failing", log, "after"),
        Recorder("inner", log, 1),
    ]
    spec = ChatClient(model, advisors=advisors).prompt("q")
    with pytest.raises(Boom, match="failing"):
        spec.call().content() if mode == "call" else list(spec.stream().content())
    assert log == ["outer>", "failing>", "inner>", "<inner", "<failing"] and len(model.prompts) == 1


def test_a_model_error_reaches_the_caller_unchanged() -> None:
    log: list[str] = []
    with pytest.raises(ModelError, match="quota"):
        ChatClient(FakeChatModel([ModelError("quota")]), advisors=[Recorder("a", log)]).prompt(
            "q"
        ).call().content()
    assert log == ["a>"]


def test_an_advisor_that_returns_nothing_is_named() -> None:
    class Forgetful(BaseAdvisor):
        def after(self, response: ChatClientResponse, chain: AdvisorChain) -> ChatClientResponse:
            return None  # type: ignore[return-value]

    with pytest.raises(InvalidRequestError, match=r"advisor 'Forgetful' returned None.*forget to return"):
        ChatClient(FakeChatModel(default="ok"), advisors=[Forgetful()]).prompt("q").call().content()


class CallOnly:
    name = "call-only"
    order = 0

    def advise_call(self, request: ChatClientRequest, chain: AdvisorChain) -> ChatClientResponse:
        return chain.next_call(request)


class StreamOnly:
    name = "stream-only"
    order = 0

    def advise_stream(self, request: ChatClientRequest, chain: AdvisorChain) -> Iterator[ChatClientResponse]:
        yield from chain.next_stream(request)


def test_an_advisor_that_cannot_stream_is_reported_not_skipped() -> None:
    model = FakeChatModel(default="ok")
    client = ChatClient(model, advisors=[CallOnly()])
    assert client.prompt("q").call().content() == "ok"
    with pytest.raises(InvalidRequestError, match=r"advisor 'call-only' \(CallOnly\) supports only calls"):
        client.prompt("q").stream()
    # A chain built for calls and streamed by hand reports it too, before the model is asked.
    chain = AdvisorChain.build(model, [CallOnly()])
    with pytest.raises(InvalidRequestError, match="'call-only'"):
        list(chain.next_stream(ChatClientRequest(Prompt("q"))))
    assert len(model.prompts) == 1


def test_an_advisor_that_only_streams_is_reported_in_calls() -> None:
    client = ChatClient(FakeChatModel(default="ok word"), advisors=[StreamOnly()])
    assert "".join(client.prompt("q").stream().content()) == "ok word"
    with pytest.raises(
        InvalidRequestError, match=r"advisor 'stream-only' \(StreamOnly\) supports only streams"
    ):
        client.prompt("q").call().content()


class Events:
    """A chat model whose stream logs each chunk it hands out, to see interleaving with the consumer."""

    def __init__(self, log: list[str]) -> None:
        self.log = log

    @property
    def default_options(self) -> ChatOptions:
        return ChatOptions()

    def call(self, prompt: Prompt) -> ChatResponse:
        raise AssertionError("not used")

    def stream(self, prompt: Prompt) -> Iterator[ChatResponse]:
        for piece in ("Hel", "lo"):
            self.log.append(f"model:{piece}")
            yield ChatResponse(AssistantMessage(piece))
        self.log.append("model:end")
        yield ChatResponse(AssistantMessage(None), "stop", Usage(3, 2, 5), "m")


def test_streaming_passes_chunks_on_as_they_arrive_and_after_sees_the_aggregate() -> None:
    log: list[str] = []
    seen: list[ChatResponse] = []

    class Watch(BaseAdvisor):
        def after(self, response: ChatClientResponse, chain: AdvisorChain) -> ChatClientResponse:
            log.append("after")
            seen.append(response.chat_response)
            return response

    for piece in ChatClient(Events(log), advisors=[Watch()]).prompt("q").stream().content():
        log.append(f"got:{piece}")
    assert log == ["model:Hel", "got:Hel", "model:lo", "got:lo", "model:end", "after"]
    (aggregate,) = seen
    assert (aggregate.text, aggregate.finish_reason, aggregate.usage, aggregate.model) == (
        "Hello",
        "stop",
        Usage(3, 2, 5),
        "m",
    )


def test_metadata_added_in_after_reaches_the_stream_as_a_trailing_chunk() -> None:
    class Tag(BaseAdvisor):
        def after(self, response: ChatClientResponse, chain: AdvisorChain) -> ChatClientResponse:
            return response.with_metadata(tag=response.text.upper())

    chunks = list(
        ChatClient(FakeChatModel([["a", "b"]]), advisors=[Tag()]).prompt("q").stream().chat_response()
    )
    assert [c.text for c in chunks] == ["a", "b", "", ""]
    assert chunks[-1].metadata == {"tag": "AB"} and chunks[-2].finish_reason == "stop"


def test_tool_calls_and_usage_are_aggregated_for_after() -> None:
    from rag.chat import ToolCall

    seen: list[ChatResponse] = []

    class Watch(BaseAdvisor):
        def after(self, response: ChatClientResponse, chain: AdvisorChain) -> ChatClientResponse:
            seen.append(response.chat_response)
            return response

    call = ToolCall("c1", "lookup", '{"q": 1}')
    model = FakeChatModel([AssistantMessage("thinking", (call,))])
    list(ChatClient(model, advisors=[Watch()]).prompt("q").stream().chat_response())
    assert seen[0].message.tool_calls == (call,) and seen[0].finish_reason == "tool_calls"
    assert seen[0].text == "thinking" and seen[0].usage == Usage(1, 1, 2)


def test_timings_usage_and_observer_events() -> None:
    log: list[str] = []
    events: list[ObservationEvent] = []
    client = ChatClient(
        FakeChatModel(default="two words"),
        advisors=[Recorder("a", log), Recorder("b", log, 5)],
        observer=events.append,
    )
    response = client.prompt("one").call().response()
    timings = response.context[TIMINGS]
    assert [t.name for t in timings] == ["model:call", "b", "a"] and all(t.seconds >= 0 for t in timings)
    assert response.context[USAGE] == Usage(1, 2, 3)
    assert [(e.kind, e.name, e.mode) for e in events] == [
        ("model", "model:call", "call"),
        ("advisor", "b", "call"),
        ("advisor", "a", "call"),
        ("request", "request", "call"),
    ]
    # Own times exclude the steps behind: together they never exceed the request's total.
    assert sum(t.seconds for t in timings) <= events[-1].seconds
    assert events[0].usage == Usage(1, 2, 3) and events[-1].usage == Usage(1, 2, 3)

    events.clear()
    stream = client.prompt("one").stream()
    assert "".join(stream.content()) == "two words"
    assert [(e.kind, e.name, e.mode) for e in events] == [
        ("model", "model:stream", "stream"),
        ("advisor", "b", "stream"),
        ("advisor", "a", "stream"),
        ("request", "request", "stream"),
    ]
    assert stream.context[USAGE] == Usage(1, 2, 3) and stream.context[MODEL_CALLS] == 1


def test_failed_steps_are_reported_with_their_error() -> None:
    events: list[ObservationEvent] = []
    client = ChatClient(FakeChatModel([ModelError("down")]), advisors=[BaseAdvisor()], observer=events.append)
    with pytest.raises(ModelError):
        client.prompt("q").call().content()
    assert [(e.kind, type(e.error).__name__) for e in events] == [
        ("model", "ModelError"),
        ("advisor", "ModelError"),
        ("request", "ModelError"),
    ]


def test_steps_are_logged_at_debug_on_rag_client(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="rag.client"):
        ChatClient(FakeChatModel(default="ok"), advisors=[BaseAdvisor(name="pass")]).prompt(
            "q"
        ).call().content()
    messages = [r.getMessage() for r in caplog.records if r.name == "rag.client"]
    assert any(m.startswith("call model 'model:call' took") for m in messages)
    assert any(m.startswith("call advisor 'pass' took") for m in messages)
    assert any(m.startswith("call request 'request' took") for m in messages)
