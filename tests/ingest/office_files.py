"""Office documents and e-books built by the tests: Word, PowerPoint and Excel through the libraries that
write them, OpenDocument text and EPUB as the zip archives their specifications describe."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path


def docx_file(path: Path) -> Path:
    import docx

    document = docx.Document()
    document.core_properties.title = "Lantern handbook"
    document.add_paragraph("Keeping the lantern lit", style="Title")
    document.add_paragraph("An introduction for new keepers.")
    document.add_heading("Installation", level=1)
    document.add_heading("Mounting", level=2)
    document.add_paragraph("Bolt the quartz prism to the gallery rail.")
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text = "Part", "Torque"
    table.cell(1, 0).text, table.cell(1, 1).text = "prism bolt", "12 Nm"
    document.add_heading("Maintenance", level=1)
    document.add_paragraph("Polish the Fresnel lens every solstice.")
    document.save(path)
    return path


def pptx_file(path: Path) -> Path:
    import pptx
    from pptx.util import Inches

    deck = pptx.Presentation()
    first = deck.slides.add_slide(deck.slide_layouts[1])
    first.shapes.title.text = "Fog signals"
    first.placeholders[1].text = "Sound the diaphone every thirty seconds."
    second = deck.slides.add_slide(deck.slide_layouts[5])
    second.shapes.title.text = "Rotation schedule"
    rows = second.shapes.add_table(2, 2, Inches(1), Inches(2), Inches(4), Inches(1)).table
    rows.cell(0, 0).text, rows.cell(0, 1).text = "Keeper", "Watch"
    rows.cell(1, 0).text, rows.cell(1, 1).text = "Morwenna", "midnight"
    second.notes_slide.notes_text_frame.text = "Remind the keepers about the albatross nest."
    deck.save(path)
    return path


def xlsx_file(path: Path) -> Path:
    import openpyxl

    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet.title = "Supplies"
    sheet.append(["item", "quantity"])
    sheet.append(["paraffin barrels", 14])
    sheet.append([None, None])
    costs = workbook.create_sheet("Costs")
    costs.append(["wick", 2.5])
    workbook.save(path)
    return path


_ODT_CONTENT = """<?xml version="1.0" encoding="UTF-8"?>
<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0"
  xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"
  xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" office:version="1.3">
 <office:body><office:text>
  <text:h text:outline-level="1">Tide tables</text:h>
  <text:p>Spring<text:s text:c="2"/>tides <text:span>flood</text:span> the causeway.</text:p>
  <text:list><text:list-item><text:p>Check the gauge at dawn.</text:p></text:list-item></text:list>
  <text:h text:outline-level="2">Neap tides</text:h>
  <table:table><table:table-row>
   <table:table-cell><text:p>low water</text:p></table:table-cell>
   <table:table-cell><text:p>0.4 m</text:p></table:table-cell>
  </table:table-row></table:table>
 </office:text></office:body>
</office:document-content>"""

_ODT_META = """<?xml version="1.0" encoding="UTF-8"?>
<office:document-meta xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0"
  xmlns:dc="http://purl.org/dc/elements/1.1/"><office:meta><dc:title>Harbour almanac</dc:title></office:meta>
</office:document-meta>"""


def odt_file(path: Path) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(
            "mimetype", "application/vnd.oasis.opendocument.text", compress_type=zipfile.ZIP_STORED
        )
        archive.writestr("content.xml", _ODT_CONTENT, compress_type=zipfile.ZIP_DEFLATED)
        archive.writestr("meta.xml", _ODT_META, compress_type=zipfile.ZIP_DEFLATED)
    return path


_CONTAINER = """<?xml version="1.0"?>
<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">
 <rootfiles><rootfile full-path="OEBPS/book.opf" media-type="application/oebps-package+xml"/></rootfiles>
</container>"""

_OPF = """<?xml version="1.0" encoding="UTF-8"?>
<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id">
 <metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>The keeper's log</dc:title></metadata>
 <manifest>
  <item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>
  <item id="c1" href="text/chapter%201.xhtml" media-type="application/xhtml+xml"/>
  <item id="c2" href="text/chapter2.xhtml" media-type="application/xhtml+xml"/>
 </manifest>
 <spine><itemref idref="nav"/><itemref idref="c1"/><itemref idref="c2"/></spine>
</package>"""


def _chapter(title: str, body: str) -> str:
    return (
        '<?xml version="1.0" encoding="UTF-8"?><html xmlns="http://www.w3.org/1999/xhtml">'
        f"<head><title>{title}</title></head><body><h1>{title}</h1><p>{body}</p></body></html>"
    )


def epub_file(path: Path) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("mimetype", "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        archive.writestr("META-INF/container.xml", _CONTAINER)
        archive.writestr("OEBPS/book.opf", _OPF)
        archive.writestr("OEBPS/nav.xhtml", _chapter("Contents", "table of contents"))
        archive.writestr(
            "OEBPS/text/chapter 1.xhtml", _chapter("The storm", "Gulls sheltered in the lamp room.")
        )
        archive.writestr(
            "OEBPS/text/chapter2.xhtml", _chapter("The calm", "The supply boat brought oranges.")
        )
    return path


def zip_bomb(path: Path, unpacked: int) -> Path:
    """A small archive named like a Word file whose one member unpacks to `unpacked` bytes of zeros."""
    buffer = io.BytesIO()
    with (
        zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as archive,
        archive.open("word/document.xml", "w", force_zip64=True) as member,
    ):
        chunk = b"\0" * (1 << 20)
        for _ in range(unpacked // len(chunk)):
            member.write(chunk)
    path.write_bytes(buffer.getvalue())
    return path
