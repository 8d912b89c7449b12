"""Markdown: front matter, titles, heading paths, code fences, offsets."""

from __future__ import annotations

from ingest.readers import ReadResult
from tests.ingest.conftest import Read

GUIDE = """\
---
title: Installing Widgets
tags: [setup, linux]
version: 2
published: 2024-05-01
author:
  name: Ann
  links: [{a: 1}]
source: ignored.md
draft: null
---
Intro before any heading.

# Widgets

Widgets are small.

## Install

```bash
# not a heading
make install
```

### From source

Run `make`.

Setext section
--------------

Body of the setext section.

## Empty parent

### Child

Child text.
"""


def _texts_match_offsets(result: ReadResult, text: str) -> bool:
    return all(text[u.char_offset : u.char_offset + len(u.text)] == u.text for u in result.units)


def test_front_matter_becomes_metadata(read: Read) -> None:
    unit = read("guide.md", GUIDE).units[0]
    assert unit.metadata == {
        "title": "Installing Widgets",
        "tags": ["setup", "linux"],
        "version": 2,
        "published": "2024-05-01",
        "author.name": "Ann",
        "source": "guide.md",  # never the front matter's own `source`
    }
    assert unit.text == "Intro before any heading."


def test_sections_carry_their_heading_path(read: Read) -> None:
    result = read("guide.md", GUIDE)
    sections = [(u.metadata.get("section"), u.text.splitlines()[0]) for u in result.units]
    assert sections == [
        (None, "Intro before any heading."),
        ("Widgets", "# Widgets"),  # front matter names the title, so the H1 stays in paths
        ("Widgets > Install", "## Install"),
        ("Widgets > Install > From source", "### From source"),
        ("Widgets > Setext section", "Setext section"),  # a `---` underline is level 2
        ("Widgets > Empty parent > Child", "### Child"),
    ]
    assert "# not a heading" in result.units[2].text
    assert _texts_match_offsets(result, GUIDE)


def test_first_h1_is_the_title_and_leaves_the_paths(read: Read) -> None:
    doc = "Title Here\n==========\n\nLead.\n\n## Install ##\n\n### From [source](http://x)\n\nBuild it.\n"
    result = read("readme.md", doc)
    assert [u.metadata.get("section") for u in result.units] == [None, "Install > From source"]
    assert {u.metadata["title"] for u in result.units} == {"Title Here"}
    assert _texts_match_offsets(result, result.text or "") and "### From source\n" in (result.text or "")


def test_headings_inside_fences_and_indented_code_are_ignored(read: Read) -> None:
    doc = "# Doc\n\n~~~~\n## fake\n~~~\n## still fake\n~~~~\n\n    # indented code\n\nText.\n"
    result = read("code.md", doc)
    assert len(result.units) == 1
    assert "section" not in result.units[0].metadata


def test_bad_yaml_is_a_warning_not_a_failure(read: Read) -> None:
    result = read("bad.md", "---\ntitle: [unclosed\n---\n# Real Title\n\nBody.\n")
    assert result.warnings and result.warnings[0].startswith("front matter is not valid YAML")
    assert result.units[0].metadata["title"] == "Real Title"
    assert "unclosed" not in result.units[0].text


def test_a_rule_at_the_top_is_not_front_matter(read: Read) -> None:
    doc = "---\nJust a sentence between rules.\n---\n\nMore text.\n"
    result = read("rule.md", doc)
    assert "Just a sentence" in result.units[0].text
    assert result.warnings == []


def test_a_document_without_headings_is_one_unit(read: Read) -> None:
    result = read("plain.markdown", "Only text,\nno headings.\n")
    assert [u.text for u in result.units] == ["Only text,\nno headings."]
    assert result.units[0].metadata == {"source": "plain.markdown"}


def test_utf16_markdown_is_read(read: Read) -> None:
    result = read("wide.md", "# Größe\n\nÜber.\n".encode("utf-16"))
    assert result.units[0].metadata["title"] == "Größe"
