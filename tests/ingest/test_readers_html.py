"""HTML: visible text only, titles, block structure, entities, encodings."""

from __future__ import annotations

from tests.ingest.conftest import Read

PAGE = """<!DOCTYPE html>
<html><head>
<meta charset="utf-8"><title>  Widget   Guide </title>
<style>body { color: red }</style><script>var secret = "script text";</script>
</head><body>
<header><a href="/">Site header</a></header>
<nav><ul><li>Home<li>Docs</ul></nav>
<main>
<h1>Installing</h1>
<p>Widgets need <b>two</b>   screws&nbsp;&amp; a <em>bolt</em>.<br>Second line.</p>
<ul><li>First item</li><li>Second item</li></ul>
<table><tr><th>Size</th><th>Price</th></tr><tr><td>S</td><td>5 &euro;</td></tr></table>
<pre>  indented
    code</pre>
<svg><title>icon title</title><text>svg text</text></svg>
<template><p>template text</p></template>
<noscript>enable JavaScript</noscript>
<div hidden>hidden text</div><span aria-hidden="true">decorative</span>
<form><label>Search <input name=q></label><button>Go</button></form>
</main>
<aside>Related links</aside>
<footer>Copyright footer</footer>
</body></html>
"""


def test_only_visible_text_is_kept() -> None:
    from ingest.readers.html import visible_text

    text, title = visible_text(PAGE)
    assert title == "Widget Guide"
    gone_words = "script text|color: red|Site header|Home|icon title|svg text|template text|enable JavaScript"
    for gone in [*gone_words.split("|"), "hidden text", "decorative", "Search", "Go", "Related", "foot"]:
        assert gone not in text, gone
    assert text == (
        "Installing\n\nWidgets need two screws\xa0& a bolt.\nSecond line.\n\nFirst item\n\nSecond item\n\n"
        "Size\tPrice\n\nS\t5 €\n\nindented\ncode"
    )


def test_html_unit_metadata(read: Read) -> None:
    result = read("docs/guide.htm", PAGE)
    assert len(result.units) == 1
    assert result.units[0].metadata == {"source": "docs/guide.htm", "title": "Widget Guide"}


def test_first_h1_is_the_title_without_title_element(read: Read) -> None:
    result = read("a.html", "<body><h1>Main <i>heading</i></h1><p>Text</p><h1>Second</h1></body>")
    assert result.units[0].metadata["title"] == "Main heading"


def test_declared_legacy_charset_is_used(read: Read) -> None:
    page = '<meta charset="windows-1252"><p>\x93Quoted\x94 caf\xe9</p>'.encode("latin-1")
    result = read("legacy.html", page)
    assert result.units[0].text == "“Quoted” café"
    assert result.warnings == []


def test_unclosed_tags_and_a_page_without_text(read: Read) -> None:
    result = read("broken.html", "<div><p>One<p>Two<nav>menu<div>Three")
    assert result.units[0].text == "One\n\nTwo"
    assert read("empty.html", "<html><script>x()</script></html>").units == []


NAVIGATED = """<html><body>
<a href="#apicontent" class="skip-to-content">Skip to content</a>
<div role="navigation" id="column2"><ul><li><a href="fs.html">File system</a></li></ul></div>
<div class="navheader"><table><tr><td>Prev</td><td>Up</td></tr></table></div>
<div class="Nav Sidebar">Site menu</div>
<div role="main" id="apicontent"><h1>Zlib</h1><p>Compression with gzip and deflate.</p></div>
<div class="navfooter">Next: HTTP</div>
</body></html>"""


def test_navigation_without_nav_elements_is_left_out(read: Read) -> None:
    # Node's API pages and Sphinx name their menus by ARIA role, DocBook by class: every page repeats them.
    result = read("zlib.html", NAVIGATED)
    assert result.text == "Zlib\n\nCompression with gzip and deflate."
