"""Evidence the offline answerer weighs beyond shared words: the kind of answer asked for, a sentence
continuing the one before it, words that are not question words, and where a long sentence is cut."""

from __future__ import annotations

import pytest

from tests.rag.extractive_quotes import quote_lines


@pytest.mark.parametrize(
    ("question", "plain", "holding"),
    [
        (
            "When did the orchard open its cider press?",
            "The orchard opened its cider press to visitors.",
            "The orchard opened its cider press in 1998.",
        ),
        (
            "How many hives does the orchard keep?",
            "The orchard keeps hives beside the pond.",
            "The orchard keeps forty hives.",
        ),
        (
            "Who pruned the orchard trees?",
            "The orchard trees were pruned by the volunteers.",
            "The orchard trees were pruned by Mara Lind.",
        ),
        (
            "Where was the orchard cider pressed?",
            "The orchard cider was pressed slowly.",
            "The orchard cider was pressed in Tampere.",
        ),
    ],
)
def test_a_sentence_holding_the_kind_of_answer_asked_for_is_quoted_first(
    question: str, plain: str, holding: str
) -> None:
    passages = f"[1] (source: a.md)\n{plain}\n\n[2] (source: b.md)\n{holding}"
    assert quote_lines(passages, question)[0] == f"- {holding} [b.md]"


def test_a_year_the_question_already_names_is_not_the_answer_asked_for() -> None:
    passages = (
        "[1] (source: a.md)\nAfter 1998 the orchard opened its cider press to visitors.\n\n"
        "[2] (source: b.md)\nAfter 1998 the orchard opened its cider press in 2004."
    )
    quoted = quote_lines(passages, "When, after 1998, did the orchard open its cider press?")
    assert quoted[0] == "- After 1998 the orchard opened its cider press in 2004. [b.md]"


def test_a_sentence_opening_with_a_pronoun_takes_the_words_of_the_one_before() -> None:
    # "They" are the beekeepers of the sentence before: that sentence's words count for this one.
    passages = (
        "[1] (source: club.md)\nThe river club keeps its beekeepers busy all summer. "
        "They meet every Thursday in the old mill.\n\n"
        "[2] (source: town.md)\nThe town council meets every Thursday.\n\n"
        "[3] (source: notes.md)\nBeekeepers sell honey at the market."
    )
    quoted = quote_lines(passages, "Where do the river club beekeepers meet?")
    assert "- They meet every Thursday in the old mill. [club.md]" in quoted
    assert "- The town council meets every Thursday. [town.md]" not in quoted


def test_a_possessive_s_is_not_a_question_word() -> None:
    passages = (
        "[1] (source: banner.md)\nThe guild banner is red and gold.\n\n"
        "[2] (source: hall.md)\nThe town's guild banner hangs in the hall."
    )
    assert quote_lines(passages, "What colour is the guild's banner?")[0] == (
        "- The guild banner is red and gold. [banner.md]"
    )


def test_a_long_sentence_is_cut_where_it_holds_the_question_words() -> None:
    sentence = (
        "The club's members over the years include "
        + ", ".join(f"gardener number {n} of the allotment group" for n in range(1, 21))
        + ", and the beekeeper Ada Rusk, who moved the hives to the river meadow."
    )
    assert len(sentence) > 600
    quoted = quote_lines(
        f"[1] (source: members.md)\n{sentence}", "Which beekeeper moved the hives to the meadow?"
    )
    assert quoted[0].startswith("- …")
    assert quoted[0].endswith("the beekeeper Ada Rusk, who moved the hives to the river meadow. [members.md]")
    assert len(quoted[0]) < 600 + len("- … [members.md]") + 1


def test_a_long_sentence_is_cut_on_both_sides_of_the_question_words_and_never_inside_a_word() -> None:
    filler = ", ".join(f"plot {n} of the allotment" for n in range(1, 31))
    sentence = f"The map lists {filler}, the beehives that Ada Rusk moved to the meadow, {filler}."
    quoted = quote_lines(f"[1] (source: map.md)\n{sentence}", "Who moved the beehives to the meadow?")
    text = quoted[0].removeprefix("- ").removesuffix(" [map.md]")
    assert text.startswith("…") and text.endswith("…")
    assert "the beehives that Ada Rusk moved to the meadow" in text
    assert text.strip("…") in sentence
    words = text.strip("…").split()
    assert all(f" {word}" in f" {sentence}" for word in words[1:])  # whole words only, after the first cut
