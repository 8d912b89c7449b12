"""Cleaner chunk text: Markdown attribute lists and HTML tags, reStructuredText noise, AsciiDoc, --as-text."""

from __future__ import annotations

import pytest

from ingest.readers import ReadResult
from rag.errors import IngestError
from tests.ingest.conftest import Read

MKDOCS = """\
# Request Files { #request-files }

## Optional File Upload { #optional-file-upload }

Use <abbr title="Application Programming Interface">API</abbr> files.<br>
Press <kbd>Ctrl</kbd>+<kbd>C</kbd> to stop.

{: .note }

```python
x = "<kbd>kept</kbd> { #kept }"
```

Inline `<br>` and `{ #id }` code stays.
"""


def _exact(result: ReadResult) -> bool:
    text = result.text
    assert text is not None
    return all(text[u.char_offset : u.char_offset + len(u.text)] == u.text for u in result.units)


def test_markdown_attribute_lists_and_inline_html_leave_the_text(read: Read) -> None:
    result = read("files.md", MKDOCS)
    [unit] = result.units
    assert unit.metadata["title"] == "Request Files"
    assert unit.metadata["section"] == "Optional File Upload"
    assert unit.metadata["headings"] == ["Optional File Upload"]
    assert unit.text.splitlines()[:3] == [
        "## Optional File Upload",
        "",
        "Use API files.",
    ]
    assert "Press Ctrl+C to stop." in unit.text
    assert "{: .note }" not in unit.text and "abbr" not in unit.text
    # Code keeps its markup, fenced or inline.
    assert 'x = "<kbd>kept</kbd> { #kept }"' in unit.text
    assert "Inline `<br>` and `{ #id }` code stays." in unit.text
    assert _exact(result)


def test_markdown_without_noise_keeps_the_file_text(read: Read) -> None:
    doc = "# Guide\n\nSome <https://example.org> link and a < b, List<T>.\n"
    result = read("guide.md", doc)
    assert result.text == doc


RST = """\
=====
Guide
=====

Intro with :ref:`the install page <install>` and :func:`~pkg.mod.run`.

.. note:: Be careful.
   :class: x

   Really careful.

.. toctree::
   :maxdepth: 2

   install

.. _install:

Install
-------

Run this::

    pip install :ref:`kept`

.. code-block:: python
   :linenos:

   print(1)

.. a comment
   spanning lines

----

Done. See `Docs <https://x.y>`_.
"""


def test_rst_adornments_directives_and_roles_leave_the_text(read: Read) -> None:
    result = read("guide.rst", RST)
    first, install = result.units
    assert first.text == "Guide\n\nIntro with the install page and run.\n\nBe careful.\n\n   Really careful."
    assert install.metadata["headings"] == ["Install"]
    assert install.text.startswith("Install\n\nRun this:\n\n    pip install :ref:`kept`")
    assert "   print(1)" in install.text
    for noise in ("-----", ":maxdepth:", ":linenos:", "toctree", "comment", ".. ", "<https"):
        assert noise not in install.text + first.text
    assert install.text.endswith("Done. See Docs.")
    assert _exact(result)


def test_rst_inline_literals_lose_their_backquotes_but_code_keeps_them(read: Read) -> None:
    text = "Set ``CMAKE_BUILD_TYPE`` to ``Release``, see :ref:`build <b>`.\n\nRun::\n\n    x = ``raw``\n"
    result = read("literals.rst", text)
    [unit] = result.units
    assert unit.text.startswith("Set CMAKE_BUILD_TYPE to Release, see build.")
    assert "    x = ``raw``" in unit.text  # a literal block keeps its text as is
    assert _exact(result)


ADOC = """\
= Spring AI Reference
:revnumber: 1.0.0
:toc: left

Preamble about {revnumber}.

== Getting Started

include::partials/setup.adoc[]

[NOTE]
====
See xref:advisors.adoc[the advisors page] and <<chat-client,ChatClient>>.
====

NOTE: Advisors run in order.

=== Chat Client

[source,java]
----
= not a title
ChatClient.create(model);
----

// a comment line
////
A comment block.
////
Read link:https://spring.io[the site] or press kbd:[Ctrl+C].
"""


def test_asciidoc_titles_attributes_blocks_and_macros(read: Read) -> None:
    result = read("reference.adoc", ADOC)
    preamble, started, client = result.units
    assert {u.metadata["title"] for u in result.units} == {"Spring AI Reference"}
    assert preamble.metadata["revnumber"] == "1.0.0" and "section" not in preamble.metadata
    assert preamble.text == "Spring AI Reference\n\nPreamble about 1.0.0."
    assert started.metadata["section"] == "Getting Started"
    assert started.text == (
        "Getting Started\n\n\nSee the advisors page and ChatClient.\n\nAdvisors run in order."
    )
    assert client.metadata["headings"] == ["Getting Started", "Chat Client"]
    assert client.text == (
        "Chat Client\n\n= not a title\nChatClient.create(model);\n\nRead the site or press Ctrl+C."
    )
    assert _exact(result)


def test_asciidoc_long_suffix_and_no_title(read: Read) -> None:
    result = read("notes.asciidoc", "Just text, no title.\n\n== Part\n\nBody.\n")
    assert [u.metadata.get("section") for u in result.units] == [None, "Part"]
    assert "title" not in result.units[0].metadata


def test_as_text_reads_other_suffixes_as_plain_text(read: Read) -> None:
    with pytest.raises(IngestError, match=r"unsupported file type '\.cfg'"):
        read("app.cfg", "[server]\nport = 8080\n")
    result = read("app.cfg", "[server]\nport = 8080\n", text_suffixes=("CFG",))
    assert [u.text for u in result.units] == ["[server]\nport = 8080"]
    # A registered suffix named in --as-text is read as plain text too: its markup stays.
    result = read("raw.md", "## Kept { #kept }\n", text_suffixes=(".md",))
    assert result.units[0].text == "## Kept { #kept }"


def test_as_text_refuses_what_is_not_a_suffix() -> None:
    from ingest.readers import ReaderOptions

    with pytest.raises(IngestError, match=r"not a file suffix: 'a b'"):
        ReaderOptions(text_suffixes=("a b",))


def test_html_heading_permalinks_leave_the_text(read: Read) -> None:
    page = (
        '<h2 id="cors">CORS<a class="headerlink" href="#cors" title="Permanent link">¶</a></h2>'
        '<p>Add the <abbr title="Cross-Origin Resource Sharing">CORS</abbr> middleware.</p>'
    )
    result = read("cors.html", page)
    assert result.units[0].text == "CORS\n\nAdd the CORS middleware."
    assert _exact(result)


def test_markdown_comments_over_several_lines_leave_the_text(read: Read) -> None:
    # Node.js's API docs put YAML history in comments under each heading (seen on a real docs tree).
    doc = (
        "# fs\n\n#### `filehandle.readLines([options])`\n\n<!-- YAML\nadded: v18.11.0\n-->\n\n"
        "Reads lines. <!-- one line --> Keep `<!-- in code` and this.\n\nx <!-- open\nmore\n--> tail\n"
    )
    result = read("fs.md", doc)
    text = "\n".join(unit.text for unit in result.units)
    assert "YAML" not in text and "added: v18.11.0" not in text and "more" not in text
    assert "Reads lines.  Keep `<!-- in code` and this." in text and " tail" in text
    assert _exact(result)


def test_html_self_links_in_headings_leave_the_text(read: Read) -> None:
    # Node.js's HTML docs: a "#" link to the heading's own id; a plain in-page link keeps its text.
    page = (
        '<h3>Example: Read file stream line-by-Line<span><a class="mark" href="#ex" id="ex">#</a></span></h3>'
        '<h3>Other<a href="#o" id="o">§</a></h3><p>See <a href="#ex">the example</a>.</p>'
    )
    result = read("readline.html", page)
    text = "\n".join(unit.text for unit in result.units)
    assert "line-by-Line#" not in text and "§" not in text
    assert "Example: Read file stream line-by-Line" in text and "See the example." in text
    assert _exact(result)
