"""Which sentences the offline answerer quotes: new question words first, numbered lists whole, table
rows and snake_case names as content."""

from __future__ import annotations

from tests.rag.extractive_quotes import quote_lines


def _lines(passages: str, question: str, limit: int = 3) -> list[str]:
    return quote_lines(passages, question, max_sentences=limit)


def test_the_next_sentence_adds_question_words_not_yet_quoted() -> None:
    passages = (
        "[1] (source: api.html)\nRead tokens may only call GET endpoints. Operate tokens may open valves. "
        "Admin tokens may change settings. Tokens are created with vgctl.\n\n"
        "[2] (source: notes.md)\nA read token could open valves through the valves endpoint. "
        "The fix was reported by Amara Osei."
    )
    lines = _lines(passages, "Who reported that read tokens could open valves?", limit=2)
    assert any("reported by Amara Osei" in line for line in lines), lines


def test_a_numbered_list_is_quoted_whole_one_line_per_item() -> None:
    passages = (
        "[1] (source: install.md)\n## From source\n\nBuilding from source is meant for contributors.\n\n"
        "1. Install a Rust toolchain, version 1.74 or newer. The extension is written\n   in Rust.\n"
        "2. Clone the repository and run `make bootstrap`.\n3. Run `./configure`, then `make`.\n\n"
        "A full build takes 12 minutes."
    )
    lines = _lines(passages, "How do I install it?", limit=1)
    assert lines == [
        "- 1. Install a Rust toolchain, version 1.74 or newer. The extension is written in Rust. "
        "[install.md]",
        "- 2. Clone the repository and run `make bootstrap`. [install.md]",
        "- 3. Run `./configure`, then `make`. [install.md]",
    ]


def test_a_table_row_is_content_not_a_title() -> None:
    passages = (
        "[1] (source: licensing.html)\nPart\tLicence\n\nDaemon, vgctl\tGPL-3.0-or-later\n\n"
        "Node and Sprig board designs\tCERN-OHL-S v2"
    )
    assert _lines(passages, "Under which licence are the board designs published?", limit=1) == [
        "- Node and Sprig board designs\tCERN-OHL-S v2 [licensing.html]"
    ]


def test_words_of_a_snake_case_name_match_the_question() -> None:
    passages = "[1] (source: mqtt.rst)\nRemote control is disabled unless mqtt.allow_commands is true."
    assert _lines(passages, "What allows commands?", limit=1) == [
        "- Remote control is disabled unless mqtt.allow_commands is true. [mqtt.rst]"
    ]


def test_a_numbered_section_title_in_a_pdf_is_a_heading_not_a_step() -> None:
    passages = (
        "[1] (source: manual.pdf, page 2)\n2. Power supply\nThe board is powered with 24 V AC from a\n"
        "transformer. A 2.5 A fuse protects it.\n3. Connectors\nJ1 takes the power input."
    )
    assert _lines(passages, "Which fuse protects the board?", limit=1) == [
        "- A 2.5 A fuse protects it. [manual.pdf, page 2]"
    ]
    assert _lines(passages, "What powers the board?", limit=1) == [
        "- 2. Power supply: The board is powered with 24 V AC from a transformer. [manual.pdf, page 2]"
    ]


def test_markdown_table_rows_are_quoted_one_at_a_time() -> None:
    passages = (
        "[1] (source: probes.md)\n| Probe | Measures |\n|---|---|\n| Sprig-M | soil moisture |\n"
        "| Sprig-C | carbon dioxide |"
    )
    assert _lines(passages, "Which probe reads carbon dioxide?", limit=1) == [
        "- | Sprig-C | carbon dioxide | [probes.md]"
    ]


def test_a_piped_shell_line_is_not_a_table_row() -> None:
    passages = (
        "[1] (source: apt.md)\n```sh\ncurl -fsSL https://apt.example/key.asc \\\n"
        "  | sudo tee /etc/apt/key.asc\n```"
    )
    lines = _lines(passages, "Which file does tee write the key to?")
    assert lines and not any(line.startswith("- | sudo tee") for line in lines), lines


def test_a_sentence_saying_the_same_again_is_quoted_once_but_a_negation_is_not_the_same() -> None:
    # A page's one-line summary often repeats under its title: "Add ..." and "Adds ..." say one thing.
    passages = (
        "[1] (source: add_subdirectory.rst)\nAdd a subdirectory to the build.\n\n"
        "[2] (source: add_subdirectory.rst)\nAdds a subdirectory to the build. "
        "The source directory holds a CMakeLists.txt file.\n\n"
        "[3] (source: subdirs.rst)\nAdd a list of subdirectories to the build."
    )
    lines = _lines(passages, "How do I add a subdirectory to the build?")
    assert sum(" a subdirectory to the build." in line for line in lines) == 1, lines
    assert "- Add a list of subdirectories to the build. [subdirs.rst]" in lines
    negated = (
        "[1] (source: service.md)\nThe daemon runs as root.\n\n"
        "[2] (source: notes.md)\nThe daemon does not run as root."
    )
    assert len(_lines(negated, "Does the daemon run as root?")) == 2


_VALVE = "What did the crew notice at the north valve?"
_CHECKS = (
    "On Monday the crew noticed a loose bolt at the north valve.",
    "On Tuesday the crew noticed a worn gasket at the north valve.",
    "On Wednesday the crew noticed a bent handle at the north valve.",
)


def _crew_log(*sentences: str) -> str:
    return "[1] (source: log.md)\n" + "\n\n".join(sentences)


def test_a_fourth_sentence_matching_as_well_as_the_third_is_quoted() -> None:
    fourth = "On Thursday the crew noticed a cracked seal at the north valve."
    passages = _crew_log(*_CHECKS, fourth)
    assert quote_lines(passages, _VALVE) == [f"- {s} [log.md]" for s in (*_CHECKS, fourth)]
    assert len(quote_lines(passages, _VALVE, max_sentences=3)) == 3


def test_a_fourth_sentence_clearly_weaker_than_the_third_is_not_quoted() -> None:
    weaker = "The north valve crew met on Thursday morning to plan the spring repairs."
    assert quote_lines(_crew_log(*_CHECKS, weaker), _VALVE) == [f"- {s} [log.md]" for s in _CHECKS]


def test_a_weak_sentence_repeating_question_words_already_quoted_is_not_quoted() -> None:
    best = "On Monday the crew noticed a cracked seal at the north valve."
    passages = _crew_log(
        best, "The north valve was fitted in 2019 by the same crew.", "Every crew has a radio."
    )
    assert quote_lines(passages, _VALVE) == [f"- {best} [log.md]"]


def test_a_procedure_keeps_its_steps_that_repeat_the_asked_verb() -> None:
    passages = (
        "[1] (source: install.md)\nInstalling on Windows needs Python 3.11. Run pip install verdigris "
        "from a terminal.\n\n[2] (source: faq.md)\nWindows users should enable long paths before installing."
    )
    lines = quote_lines(passages, "How do I install it on Windows?")
    assert "- Run pip install verdigris from a terminal. [install.md]" in lines, lines


def test_a_keyword_query_gets_three_quotes_weak_or_not() -> None:
    fourth = "On Thursday the crew noticed a cracked seal at the north valve."
    weak = "The north valve was fitted in 2019 by the same crew."
    query = "crew notice north valve"
    assert len(quote_lines(_crew_log(*_CHECKS, fourth), query)) == 3
    assert quote_lines(_crew_log(_CHECKS[0], weak), query) == [f"- {s} [log.md]" for s in (_CHECKS[0], weak)]
