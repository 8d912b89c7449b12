"""reStructuredText: header blocks, titles, section paths, roles."""

from __future__ import annotations

from tests.ingest.conftest import Read

PEP = """\
PEP: 8
Title: Style Guide for Python Code
Author: Guido van Rossum <guido@python.org>,
        Barry Warsaw <barry@python.org>
Status: Active
Post-History: 05-Jul-2001, 01-Aug-2013

Introduction
============

This document gives coding conventions.

A Foolish Consistency
=====================

Guido's key insight.

Code Lay-out
============

Indentation
-----------

Use 4 spaces.

----

After a transition.
"""


def test_pep_header_becomes_metadata_and_leaves_the_text(read: Read) -> None:
    result = read("pep-0008.rst", PEP)
    meta = result.units[0].metadata
    assert meta["pep"] == 8
    assert meta["title"] == "Style Guide for Python Code"
    assert meta["author"] == "Guido van Rossum <guido@python.org>, Barry Warsaw <barry@python.org>"
    assert meta["post_history"] == "05-Jul-2001, 01-Aug-2013"
    assert meta["source"] == "pep-0008.rst"
    assert all("Status: Active" not in u.text for u in result.units)


def test_sections_follow_adornment_levels(read: Read) -> None:
    result = read("pep-0008.rst", PEP)
    assert [u.metadata["section"] for u in result.units] == [
        "Introduction",  # the header names the title, so every section title stays in paths
        "A Foolish Consistency",
        "Code Lay-out > Indentation",
    ]
    assert "After a transition." in result.units[-1].text  # a transition is not a title
    text = result.text
    assert text is not None and "=====" not in text  # adornments leave the extracted text
    assert all(text[u.char_offset : u.char_offset + len(u.text)] == u.text for u in result.units)


def test_overlined_title_is_the_document_title(read: Read) -> None:
    doc = "=========\n Widgets \n=========\n\nLead text.\n\nUsage\n-----\n\nCall it.\n"
    result = read("index.rst", doc)
    assert {u.metadata["title"] for u in result.units} == {"Widgets"}
    assert [u.metadata.get("section") for u in result.units] == [None, "Usage"]


def test_field_list_header(read: Read) -> None:
    result = read("notes.rest", ":Author: Ann\n:Version: 1.2\n\nTitle\n=====\n\nBody.\n")
    meta = result.units[0].metadata
    assert (meta["author"], meta["version"], meta["title"]) == ("Ann", "1.2", "Title")


def test_a_single_colon_sentence_is_prose_not_a_header(read: Read) -> None:
    result = read("prose.rst", "Note: this is a sentence.\n\nMore.\n")
    assert result.units[0].text.startswith("Note: this is a sentence.")
    assert "note" not in result.units[0].metadata


def test_short_underline_is_not_a_title(read: Read) -> None:
    result = read("short.rst", "A long line of text\n===\n\nBody.\n")
    assert "title" not in result.units[0].metadata


ROLES = """\
Policies
========

One :variable:`FOO <FOO_\\<N\\>>` here.
See :variable:`CMAKE_POLICY_DEFAULT_CMP0077
<CMAKE_POLICY_DEFAULT_CMP\\<NNNN\\>>` for details.
Set :variable:`CMAKE_POLICY_DEFAULT_CMP\\<NNNN\\>` or :pep:`498`.
Last line.
"""


def test_role_with_escaped_target_keeps_its_title(read: Read) -> None:
    text = read("policies.rst", ROLES).text
    assert "One FOO here." in text
    assert "Set CMAKE_POLICY_DEFAULT_CMP<NNNN> or PEP 498." in text


def test_role_broken_across_lines_keeps_its_title(read: Read) -> None:
    result = read("policies.rst", ROLES)
    assert "See CMAKE_POLICY_DEFAULT_CMP0077 for details.\nSet " in result.text
    assert ":variable:" not in result.text and "`" not in result.text
    assert "\nLast line." in result.text
