"""Readers keep the words users search for: reST PEP/RFC roles keep their label, AsciiDoc anchors and
image macros leave no markup behind."""

from __future__ import annotations

from tests.ingest.conftest import Read

RST = """\
Formatted strings
=================

F-strings came with :pep:`498`, and :PEP:`8#naming` names them; see :rfc:`2616#section-14`,
:pep:`the f-string PEP <498>`, :ref:`Install <install>`, :doc:`guide/install` and :py:func:`~pkg.run`.
"""


def test_rst_pep_and_rfc_roles_keep_their_label(read: Read) -> None:
    text = read("strings.rst", RST).text
    assert "F-strings came with PEP 498, and PEP 8 names them; see RFC 2616," in text
    assert "the f-string PEP, Install, guide/install and run." in text
    assert ":pep:" not in text and "`" not in text


ADOC = """\
= Speech [[top]]

[[speech-options]]
== Speech options [[options]]

The [[voice]]voice option anchor:v2[]sets the voice.

|===
| Model | Streaming
| tts-1 a| image::yes.svg[width=16]
| tts-2 | image:no.svg[Not streamed, 16]
|===

image::arch.png[alt="Speech pipeline",width=600]

image::plain.png[]
"""


def test_asciidoc_anchors_leave_and_images_become_their_alt_text(read: Read) -> None:
    result = read("speech.adoc", ADOC)
    [unit] = result.units
    assert unit.metadata["title"] == "Speech" and unit.metadata["section"] == "Speech options"
    text = result.text
    assert "[[" not in text and "anchor:" not in text and "image:" not in text and ".svg" not in text
    assert "The voice option sets the voice." in text
    assert "| tts-2 | Not streamed" in text and "Speech pipeline" in text
    assert "plain" not in text
