"""PromptTemplate: placeholders, escapes, missing variables, values passed through untouched."""

from __future__ import annotations

import pytest

from rag.chat.template import PromptTemplate
from rag.errors import TemplateError


def test_render_with_keywords_and_mapping() -> None:
    template = PromptTemplate("Q: {question}\nC: {context}\nQ again: {question}")
    assert template.variables == ("question", "context")
    assert template.render(question="why", context="because") == "Q: why\nC: because\nQ again: why"
    assert (
        template.render({"question": "a", "context": "b"}, context="kw wins")
        == "Q: a\nC: kw wins\nQ again: a"
    )


def test_values_with_braces_pass_through_untouched() -> None:
    template = PromptTemplate("{a} and {b}")
    value = '{"json": [1, 2]} {b} {{x}} {0} %s'
    assert template.render(a=value, b="{a}") == value + " and {a}"


def test_escaped_braces_are_literal() -> None:
    template = PromptTemplate('Reply as JSON like {{"answer": "{example}"}} }}{{')
    assert template.variables == ("example",)
    assert template.render(example="yes") == 'Reply as JSON like {"answer": "yes"} }{'


def test_padded_placeholder_and_non_string_values() -> None:
    assert PromptTemplate("{ n } items, ratio {r}").render(n=3, r=0.5) == "3 items, ratio 0.5"


def test_missing_variable_names_it_and_the_template() -> None:
    template = PromptTemplate("Answer {question} from {context}")
    with pytest.raises(TemplateError) as info:
        template.render(question="q")
    assert (
        str(info.value) == "missing value for 'context' in prompt template 'Answer {question} from {context}'"
    )
    assert isinstance(info.value, ValueError)


def test_several_missing_variables_are_all_named() -> None:
    with pytest.raises(TemplateError, match=r"missing values for 'a', 'b' in prompt template"):
        PromptTemplate("{a}{b}").render()


def test_long_template_is_shortened_in_messages() -> None:
    text = "x" * 500 + "{gone}"
    with pytest.raises(TemplateError) as info:
        PromptTemplate(text).render()
    assert "'gone'" in str(info.value)
    assert len(str(info.value)) < 220


@pytest.mark.parametrize(
    ("text", "brace", "column"), [("a { b", "{", 3), ("oops }", "}", 6), ("{1x}", "{", 1)]
)
def test_lone_braces_are_rejected_with_their_column(text: str, brace: str, column: int) -> None:
    with pytest.raises(TemplateError) as info:
        PromptTemplate(text)
    assert f"unmatched {brace!r} at column {column}" in str(info.value)
    assert repr(text) in str(info.value)


def test_extra_values_are_ignored_and_no_placeholder_renders_as_is() -> None:
    assert PromptTemplate("plain {{text}}").render(unused=1) == "plain {text}"
    assert PromptTemplate("").variables == ()


def test_partial_fills_some_and_escapes_their_braces() -> None:
    template = PromptTemplate("{greeting}, {name}! {{ok}}").partial(greeting="{hi}")
    assert template.variables == ("name",)
    assert template.render(name="Ada") == "{hi}, Ada! {ok}"


def test_equality_hash_and_repr() -> None:
    assert PromptTemplate("{a}") == PromptTemplate("{a}")
    assert len({PromptTemplate("{a}"), PromptTemplate("{a}")}) == 1
    assert repr(PromptTemplate("{a}")) == "PromptTemplate('{a}')"
    assert PromptTemplate("{a}").template == "{a}"


def test_non_string_template_is_rejected() -> None:
    with pytest.raises(TemplateError, match="must be a str, got 42"):
        PromptTemplate(42)  # type: ignore[arg-type]
