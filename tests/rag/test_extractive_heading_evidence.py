"""A section found by its heading is quoted: the sentences under a heading that holds the question's
words answer it, and an unrelated question still gets "cannot answer"."""

from __future__ import annotations

from rag.chat import Prompt
from rag.models.extractive import NO_MATCH, ExtractiveChatModel

RULE = "-" * 21

# The passages `rag ask "How do I install it?"` retrieves from the sample docs' guide/install.md: the
# word "install" is only in their headings.
INSTALL = (
    "[1] (source: guide/install.md)\n## After installing\n\nEnable and start the service with "
    "`sudo systemctl enable --now verdigrisd`. The daemon runs as the\nunprivileged system user `vgrow`, "
    "which the package creates. Continue with the quick start.\n\n"
    "[2] (source: guide/install.md)\n# Install\n\nThis page explains how to put verdigrisd, vgctl and the "
    "Canopy dashboard on a controller computer.\n\n"
    "[3] (source: guide/install.md)\n## From packages\n\nPackages are the easiest path and receive "
    "security fixes automatically."
)
ERRORS = (
    "[1] (source: reference/error-codes.md)\n### E-214: valve stuck open\n\nWater kept flowing for more "
    "than 20 seconds after the daemon closed a valve. The usual cause is grit in the solenoid.\n\n"
    "[2] (source: reference/cli.rst)\nvalve\n\nvgctl valve open NAME --for SECONDS opens a valve by hand."
)


def _answer(passages: str, question: str) -> str:
    prompt = Prompt(question).augment_system(f"{RULE}\n{passages}\n{RULE}")
    return ExtractiveChatModel().call(prompt).text or ""


def test_a_section_whose_heading_names_the_subject_is_quoted() -> None:
    lines = _answer(INSTALL, "How do I install it?").splitlines()[1:]
    assert lines == [
        "- After installing: Enable and start the service with `sudo systemctl enable --now verdigrisd`. "
        "[guide/install.md]",
        "- Install: This page explains how to put verdigrisd, vgctl and the Canopy dashboard on a controller "
        "computer. [guide/install.md]",
        "- The daemon runs as the unprivileged system user `vgrow`, which the package creates. "
        "[guide/install.md]",
    ]


def test_an_error_code_in_a_heading_or_a_title_line_finds_its_description() -> None:
    lines = _answer(ERRORS, "What is E-214?").splitlines()[1:]
    assert lines[0] == (  # the heading names the error the sentence describes
        "- E-214: valve stuck open: Water kept flowing for more than 20 seconds after the daemon closed a "
        "valve. [reference/error-codes.md]"
    )
    assert all("vgctl" not in line for line in lines)
    # A reST section title is a line of its own, not a Markdown heading: it scopes its sentences too.
    assert "opens a valve by hand" in _answer(ERRORS.replace("### E-214: valve stuck open", ""), "valve?")


def test_words_in_the_sentence_outweigh_words_in_its_heading() -> None:
    passages = (
        "[1] (source: a.md)\n## Install\n\nPackages are the easiest path.\n\n"
        "[2] (source: b.md)\nTo install from source, run make install."
    )
    assert _answer(passages, "How do I install it?").splitlines()[1] == (
        "- To install from source, run make install. [b.md]"
    )


def test_an_unrelated_question_still_cannot_be_answered() -> None:
    assert _answer(INSTALL, "What is the capital of France?") == NO_MATCH
    assert _answer(ERRORS, "Who wrote Hamlet?") == NO_MATCH


def test_a_question_in_the_documents_heads_its_answer() -> None:
    faq = (
        "[1] (source: faq/general.html)\nHow many zones can one controller run? Up to 64 zones.\n\n"
        "Which languages is the dashboard available in? English, Dutch, Portuguese and Finnish."
    )
    lines = _answer(faq, "Which languages can the dashboard be displayed in?").splitlines()[1:]
    assert lines[0] == "- English, Dutch, Portuguese and Finnish. [faq/general.html]"
    assert all("zones" not in line for line in lines)
