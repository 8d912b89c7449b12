"""reStructuredText includes and substitutions: a fragment's words land on the page that includes it
(as on CMake's `find_*` pages), `.txt` fragments are read as reStructuredText, and an ingest sees a
change to a fragment."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ingest.pipeline import IngestPipeline
from ingest.readers import read_file
from ingest.readers.rst_include import SUBSTITUTION_GROWTH
from ingest.splitters import RecursiveSplitter
from rag import HashingEmbedding
from stores import NumpyVectorStore
from tests.ingest.conftest import Read, Write

PAGE = """\
find_thing
----------

.. |FIND_XXX| replace:: find_thing
.. |SEARCH_XXX| replace:: thing file
.. |CMAKE_XXX_PATH| replace::
   :variable:`CMAKE_THING_PATH`

.. include:: FIND_XXX.txt

Options:

``HINTS``
  .. include:: /include/HINTS.txt
     :start-line: 1

.. include:: ../../outside.txt

.. include:: missing.txt
"""

FRAGMENT = """\
This command is used to find a |SEARCH_XXX|, see :command:`find_path`.

.. parsed-literal::

   |FIND_XXX| (<VAR> name1 `PATHS`_ :ref:`PATH_SUFFIXES <suffixes>`)

Paths come from |CMAKE_XXX_PATH|, then ``PATH``.
"""


def _tree(write: Write) -> Path:
    page = write("Help/command/find_thing.rst", PAGE)
    write("Help/command/FIND_XXX.txt", FRAGMENT)
    write("Help/include/HINTS.txt", "skipped first line\nSearch the :envvar:`THING_HINTS` folders first.\n")
    write("outside.txt", "Secret words from outside the tree.\n")
    return page


def test_an_included_fragment_lands_on_the_page_cleaned_and_substituted(tmp_path: Path, write: Write) -> None:
    page = _tree(write)
    result = read_file(page, root=tmp_path / "Help")
    text = result.text or ""
    assert "This command is used to find a thing file, see find_path." in text
    assert "find_thing (<VAR> name1 PATHS PATH_SUFFIXES)" in text  # a parsed-literal's markup is rendered
    assert "Paths come from CMAKE_THING_PATH, then PATH." in text
    assert "  Search the THING_HINTS folders first." in text and "skipped first line" not in text
    assert "|" not in text and "`" not in text and "include::" not in text
    assert "Secret" not in text  # an include never reads outside the ingested folder
    assert result.included == ["command/FIND_XXX.txt", "include/HINTS.txt"]
    assert result.warnings == [
        "include '../../outside.txt' left out: outside the ingested folder",
        "include 'missing.txt' left out: No such file or directory",
    ]
    assert [u.metadata["title"] for u in result.units] == ["find_thing"] * len(result.units)


def test_a_txt_fragment_with_rst_markup_is_read_as_rst_and_plain_text_stays_plain(read: Read) -> None:
    fragment = read("command/FIND_XXX.txt", FRAGMENT).text or ""
    assert "see find_path." in fragment and ":command:" not in fragment and "``" not in fragment
    values = read("VALUES.txt", "``Embedded``\n  Compile with ``-Z7`` flags.\n").text
    assert values == "Embedded\n  Compile with -Z7 flags.\n"
    plain = read("notes.txt", "Notes\n=====\n\nTwo dots .. and a colon: kept as written.\n").text
    assert plain == "Notes\n=====\n\nTwo dots .. and a colon: kept as written.\n"


def test_includes_nest_literal_ones_stay_as_written_and_a_cycle_is_left_out(read: Read, write: Write) -> None:
    write("a.txt", "Alpha :command:`one`.\n\n.. include:: b.txt\n")
    write("b.txt", "Beta words.\n\n.. include:: a.txt\n")
    write("code.cmake", "set(X ``raw``)\n")
    result = read("page.rst", "Page\n====\n\n.. include:: a.txt\n\n.. include:: code.cmake\n   :literal:\n")
    text = result.text or ""
    assert "Alpha one." in text and "Beta words." in text and text.count("Alpha") == 1
    assert "   set(X ``raw``)" in text
    assert result.warnings == ["include 'a.txt' left out: it includes itself"]


def _ingest(docs: Path, home: Path) -> tuple[IngestPipeline, NumpyVectorStore]:
    store = NumpyVectorStore(HashingEmbedding())
    if (home / "store").exists():
        store = NumpyVectorStore.load(home / "store", HashingEmbedding())
    pipeline = IngestPipeline(
        store,
        RecursiveSplitter(400, 0),
        manifest=home / "manifest.sqlite",
        flush=lambda: store.save(home / "store", overwrite=True),
    )
    return pipeline, store


def _page_text(store: NumpyVectorStore) -> str:
    docs = sorted(
        store.get(filter="source == 'command/find_thing.rst'"), key=lambda d: d.metadata["chunk_index"]
    )
    return " ".join(d.text for d in docs)


def test_an_ingest_reads_a_page_again_when_only_its_fragment_changed(tmp_path: Path, write: Write) -> None:
    _tree(write)
    docs, home = tmp_path / "Help", tmp_path / "home"
    pipeline, store = _ingest(docs, home)
    pipeline.run([docs])
    assert "This command is used to find a thing file" in _page_text(store)
    pipeline, store = _ingest(docs, home)
    again = {f.source: f for f in pipeline.run([docs]).files}
    page = again["command/find_thing.rst"]
    assert (page.status, page.embedded) == ("unchanged", 0)
    write("Help/command/FIND_XXX.txt", FRAGMENT.replace("command is used", "gadget is used"))
    pipeline, store = _ingest(docs, home)
    changed = {f.source: f for f in pipeline.run([docs]).files}
    assert changed["command/find_thing.rst"].status == "changed"
    text = _page_text(store)
    assert "This gadget is used to find a thing file" in text and "command is used" not in text
    write("Help/command/missing.txt", "A fragment that was missing.\n")  # an include that appears
    pipeline, store = _ingest(docs, home)
    assert {f.source: f.status for f in pipeline.run([docs]).files}["command/find_thing.rst"] == "changed"
    assert "A fragment that was missing." in _page_text(store)


def test_a_page_opening_with_a_directive_keeps_its_text(read: Read) -> None:
    result = read("DEPRECATED.rst", ".. note::\n  The ``OLD`` behavior of a policy is deprecated.\n")
    assert [u.text for u in result.units] == ["The OLD behavior of a policy is deprecated."]


def test_an_include_in_a_code_block_is_an_example_and_includes_share_the_size_limit(
    read: Read, write: Write
) -> None:
    write("big.txt", "x" * 600 + "\n")
    page = (
        "Page\n====\n\nWrite this::\n\n   .. include:: big.txt\n\n.. code-block:: rst\n\n"
        "   .. include:: missing.txt\n\n.. include:: big.txt\n\n.. include:: big.txt\n"
    )
    result = read("page.rst", page, max_file_size=1000)
    text = result.text or ""
    assert "   .. include:: big.txt" in text and "   .. include:: missing.txt" in text
    assert text.count("x" * 600) == 1
    assert result.warnings == [
        "include 'big.txt' left out: the page's includes pass 1000 bytes (--max-file-size MB raises it)"
    ]


@pytest.mark.timeout(20)
def test_an_include_of_a_fifo_or_a_folder_is_left_out_without_waiting(tmp_path: Path, read: Read) -> None:
    os.mkfifo(tmp_path / "pipe.txt")  # reading a named pipe no one writes to never ends
    (tmp_path / "folder").mkdir()
    result = read("page.rst", "Page\n====\n\nKept.\n\n.. include:: pipe.txt\n\n.. include:: folder\n")
    assert [u.text for u in result.units] == ["Page\n\nKept."]
    assert result.warnings == [
        "include 'pipe.txt' left out: not a regular file",
        "include 'folder' left out: not a regular file",
    ]


def test_substitutions_that_multiply_stop_at_a_bound_with_a_warning(read: Read) -> None:
    # |a| is 2,000 |b| and |b| 2,000 |c|: written out, one reference would be 4 million words.
    page = (
        "Bomb\n====\n\n"
        f".. |a| replace:: {'|b| ' * 2000}\n.. |b| replace:: {'|c| ' * 2000}\n.. |c| replace:: word\n\n"
        "Go |a| now. Short |c| stays.\n"
    )
    result = read("bomb.rst", page)
    text = result.text or ""
    assert len(text) <= len(page) + SUBSTITUTION_GROWTH
    assert result.warnings == [
        "substitutions stopped at 1,000,000 added characters; the rest stay as written"
    ]
    assert text.startswith("Bomb\n\nGo word word")  # replaced up to the bound, the rest as written
