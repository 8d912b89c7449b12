"""Markdown links keep their text and lose their URLs, escapes lose their backslash, and reference
definitions leave the text: what real trees (Node.js' changelogs and API pages) left in chunks."""

from __future__ import annotations

from tests.ingest.conftest import Read

CHANGELOG = r"""# Changelog

* \[[`c98d0c984d`](https://github.com/nodejs/node/commit/c98d0c984d)] - **async\_hooks**: rename
  SSL\_export\_keying\_material [#9723](https://github.com/nodejs/node/pull/9723 "PR").
* [![Build Status](https://ci.example/badge.svg)](https://ci.example) from [node:timers](./timers.md#t_(x))
  and [`console.error()`][] with [the guide][guide], [kept], ![diagram](arch.png) and `[a](b) \_`.

\# is not a heading, 1\. is not a list.

[`console.error()`]: #consoleerrordata-args
[guide]: https://example.com/guide "The guide"
[^1]: A footnote keeps its text.

```md
[code](https://stays.example) \_
[label]: https://stays.example
```
"""


def test_links_keep_their_text_escapes_lose_their_backslash_definitions_leave(read: Read) -> None:
    result = read("CHANGELOG.md", CHANGELOG)
    text = result.text or ""
    assert "* [`c98d0c984d`] - **async_hooks**: rename\n  SSL_export_keying_material #9723." in text
    assert "* Build Status from node:timers\n  and `console.error()` with the guide, [kept], diagram" in text
    assert "and `[a](b) \\_`." in text  # inline code keeps its text as written
    assert "\\# is not a heading, 1. is not a list." in text
    assert "#consoleerrordata-args" not in text and 'guide "The guide"' not in text
    assert "[^1]: A footnote keeps its text." in text
    assert "[code](https://stays.example) \\_\n[label]: https://stays.example" in text  # code stays
    assert "github.com" not in text and "badge.svg" not in text and "timers.md" not in text
    assert [u.metadata.get("section") for u in result.units] == [None]
