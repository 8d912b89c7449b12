"""Which sentences the offline answerer quotes from several passages, and how it cuts and labels them."""

from __future__ import annotations

from tests.rag.extractive_quotes import quote_lines


def test_the_sentence_after_the_one_naming_the_subject_is_quoted_with_it() -> None:
    # "It was held ..." says where; only the sentence before it names the open day.
    passages = (
        "[1] (source: fair.md)\nThe open day moved to a Monday evening. It was held in the old granary.\n\n"
        "[2] (source: club.md)\nTickets were held back for members."
    )
    assert quote_lines(passages, "Where was the open day held?") == [
        "- The open day moved to a Monday evening. [fair.md]",
        "- It was held in the old granary. [fair.md]",
    ]


def test_how_many_does_not_match_a_sentence_by_the_word_many() -> None:
    passages = (
        "[1] (source: board.md)\nThe controller board drives eight valves.\n\n"
        "[2] (source: forum.md)\nMany growers fit a second board."
    )
    assert quote_lines(passages, "How many valves does the board drive?") == [
        "- The controller board drives eight valves. [board.md]"
    ]


def test_a_long_sentence_holding_every_question_word_beats_a_short_one_holding_fewer() -> None:
    long = (
        "The first greenhouse controller, built in a garden shed in Tampere in 2014 by two members of the "
        "allotment group, ran for three winters on a single relay board, a car battery, a borrowed laptop "
        "and a thermometer taped to the glass above the tomato beds."
    )
    short = "The first controller was built from a kit."
    passages = f"[1] (source: history.md)\n{long}\n\n[2] (source: shop.md)\n{short}"
    lines = quote_lines(passages, "Where was the first greenhouse controller built?")
    assert lines[0] == f"- {long} [history.md]", lines


def test_of_two_close_matches_the_passage_retrieved_first_is_quoted_first() -> None:
    first = "In every dry summer season the garden pump primes itself before morning watering starts."
    passages = (
        f"[1] (source: pump.md)\n{first}\n\n[2] (source: a.md)\nSensors read moisture.\n\n"
        "[3] (source: b.md)\nLogs rotate daily.\n\n"
        "[4] (source: notes.md)\nThe pump primes itself before watering."
    )
    assert quote_lines(passages, "Does the pump prime itself before watering?") == [
        f"- {first} [pump.md]",
        "- The pump primes itself before watering. [notes.md]",
    ]


def test_abbreviations_and_initials_do_not_end_a_sentence() -> None:
    passages = (
        "[1] (source: museum.md)\nThe largest object is the retable of St. George, c. 1400, "
        "painted by J. S. Marzal in Valencia. It hangs in room 9."
    )
    quoted = quote_lines(passages, "Who painted the retable of St. George?")
    assert quoted[0] == (
        "- The largest object is the retable of St. George, c. 1400, painted by J. S. Marzal in "
        "Valencia. [museum.md]"
    )


def test_a_long_sentence_is_quoted_whole_up_to_600_characters() -> None:
    sentence = (
        "When the Mongols placed the growers of the northern valley above the others at the court, "
        + "the council objected at length, " * 12
        + "because the northern growers had surrendered their orchards peacefully."
    )
    assert 400 < len(sentence) < 600
    quoted = quote_lines(
        f"[1] (source: valley.md)\n{sentence}", "Why were the northern growers ranked higher?"
    )
    assert quoted == [f"- {sentence} [valley.md]"]


def test_a_source_name_holding_a_comma_is_cited_whole() -> None:
    passages = "[1] (source: Fresno,_California.md)\nFresno lies in the San Joaquin Valley."
    assert quote_lines(passages, "Where does Fresno lie?") == [
        "- Fresno lies in the San Joaquin Valley. [Fresno,_California.md]"
    ]
