"""Generate the sample corpus's PDF manuals into data/docs/manuals/ (or a folder given on the command line).

The PDFs are built from the text below with fpdf2, then pypdf adds page labels where a document has front
matter. Creation dates and every other piece of metadata are fixed, so a re-run writes identical bytes.

Usage:
    python data/make_pdfs.py            # writes data/docs/manuals/*.pdf
    python data/make_pdfs.py /tmp/out   # writes /tmp/out/*.pdf
"""

from __future__ import annotations

import datetime as dt
import io
import sys
from dataclasses import dataclass
from pathlib import Path

from fpdf import FPDF
from pypdf import PdfReader, PdfWriter
from pypdf.constants import PageLabelStyle

__all__ = ["DOCUMENTS", "LabelRange", "Page", "PdfSpec", "build_all", "build_pdf", "main", "page_labels"]

# A fixed date keeps the output byte-for-byte reproducible; fpdf2 would otherwise stamp "now".
_CREATED = dt.datetime(2024, 10, 1, 9, 0, 0, tzinfo=dt.UTC)
_ROMAN = ((10, "x"), (9, "ix"), (5, "v"), (4, "iv"), (1, "i"))


@dataclass(frozen=True)
class Page:
    """One printed page: a heading and its paragraphs."""

    heading: str
    paragraphs: tuple[str, ...]


@dataclass(frozen=True)
class LabelRange:
    """Pages `first` to `last` (0-based, inclusive) numbered "roman" or "decimal", after `prefix`."""

    first: int
    last: int
    style: str
    prefix: str = ""


@dataclass(frozen=True)
class PdfSpec:
    """One generated document.

    Example:
        >>> spec = PdfSpec("a.pdf", "A", "B", (Page("H", ("text",)),))
        >>> page_labels(spec)
        ['1']
    """

    filename: str
    title: str
    subject: str
    pages: tuple[Page, ...]
    labels: tuple[LabelRange, ...] = ()


def _roman(number: int) -> str:
    out = []
    for value, letters in _ROMAN:
        while number >= value:
            out.append(letters)
            number -= value
    return "".join(out)


def page_labels(spec: PdfSpec) -> list[str]:
    """The label a PDF viewer shows for each page of `spec` (plain 1, 2, 3... without label ranges)."""
    labels = [str(i + 1) for i in range(len(spec.pages))]
    for rng in spec.labels:
        for offset, index in enumerate(range(rng.first, rng.last + 1)):
            number = _roman(offset + 1) if rng.style == "roman" else str(offset + 1)
            labels[index] = rng.prefix + number
    return labels


class _ManualPdf(FPDF):
    """fpdf2 document with a running header (the title) and a footer (the page label)."""

    def __init__(self, title: str, labels: list[str]) -> None:
        super().__init__(format="A4")
        self._doc_title = title
        self._labels = labels

    def header(self) -> None:
        self.set_font("Helvetica", "I", 8)
        self.cell(0, 6, self._doc_title, align="R")
        self.ln(10)

    def footer(self) -> None:
        self.set_y(-15)
        self.set_font("Helvetica", "", 8)
        self.cell(0, 8, f"Page {self._labels[self.page_no() - 1]}", align="C")


def _render(spec: PdfSpec) -> bytes:
    pdf = _ManualPdf(spec.title, page_labels(spec))
    pdf.set_creation_date(_CREATED)
    pdf.set_title(spec.title)
    pdf.set_subject(spec.subject)
    pdf.set_author("The Verdigris contributors")
    pdf.set_creator("data/make_pdfs.py")
    pdf.set_producer("fpdf2")
    for page in spec.pages:
        pdf.add_page()
        pdf.set_font("Helvetica", "B", 15)
        pdf.multi_cell(0, 9, page.heading)
        pdf.ln(3)
        pdf.set_font("Helvetica", "", 11)
        for paragraph in page.paragraphs:
            pdf.multi_cell(0, 6, paragraph)
            pdf.ln(3)
    return bytes(pdf.output())


def build_pdf(spec: PdfSpec) -> bytes:
    """The bytes of one document, with page labels applied when the spec has label ranges."""
    raw = _render(spec)
    if not spec.labels:
        return raw
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(raw)))
    for rng in spec.labels:
        style = PageLabelStyle.LOWERCASE_ROMAN if rng.style == "roman" else PageLabelStyle.DECIMAL
        writer.set_page_label(rng.first, rng.last, style=style, prefix=rng.prefix or None)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def build_all(out_dir: Path) -> list[Path]:
    """Write every document into `out_dir` (created if missing) and return the paths written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for spec in DOCUMENTS:
        path = out_dir / spec.filename
        path.write_bytes(build_pdf(spec))
        written.append(path)
    return written


def main(argv: list[str]) -> int:
    """Command-line entry: optional output folder, default data/docs/manuals next to this script."""
    out_dir = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parent / "docs" / "manuals"
    for path in build_all(out_dir):
        print(path)
    return 0


_HARDWARE = PdfSpec(
    filename="node-v2-hardware-manual.pdf",
    title="Verdigris Node V2 Hardware Manual",
    subject="Installation and wiring of the Node V2 field board",
    labels=(LabelRange(0, 1, "roman"), LabelRange(2, 5, "decimal")),
    pages=(
        Page(
            "Verdigris Node V2 Hardware Manual",
            (
                "Document VG-HW-002, revision C, October 2024.",
                "This manual applies to Node V2 boards with PCB revision 2.3 and later. Boards with an "
                "earlier revision printed next to the fuse holder need the errata sheet VG-HW-002-E1.",
                "It is written for installers who mount, power and wire the board in a greenhouse. Growers "
                "who only configure schedules do not need it.",
            ),
        ),
        Page(
            "Revision history and conventions",
            (
                "Revision A (May 2023): first edition.",
                "Revision B (January 2024): added the fuse table and the cable length limits.",
                "Revision C (October 2024): corrected the pin numbering of connector J4.",
                "Paragraphs starting with WARNING describe a risk of injury or fire. Paragraphs starting "
                "with NOTE describe a risk of damage to the board or to plants.",
            ),
        ),
        Page(
            "1. Board overview",
            (
                "The Node V2 measures 160 x 110 mm and is fixed to the back plate of its enclosure with "
                "four M4 screws. It is built around an RP2040 microcontroller running at 133 MHz.",
                "The board has 8 valve outputs (V1 to V8), 4 relay channels (L1 to L4) for lamps, heaters "
                "or vent motors, 2 sensor bus ports and one 100 Mbit Ethernet port.",
                "NOTE: power over Ethernet is not supported. Do not connect the Ethernet port to a PoE "
                "injector without a splitter.",
            ),
        ),
        Page(
            "2. Power supply",
            (
                "The board is powered with 24 V AC from a class II safety transformer rated at least 50 VA. "
                "The same supply drives the irrigation valves.",
                "Fuse F1 protects the board: a 2.5 A slow-blow fuse, 5 x 20 mm. Keep two spares in the "
                "enclosure.",
                "Each valve output delivers up to 800 mA. The total valve current must stay below 2 A, so "
                "with typical 350 mA solenoids no more than five valves may be open at once; the firmware "
                "enforces this limit.",
            ),
        ),
        Page(
            "3. Connectors",
            (
                "J1: 24 V AC power input. J2: valve terminal block; every valve shares the common terminal "
                "marked C.",
                "J3 and J4: RJ45 sensor bus ports for bus 1 and bus 2. Bus termination is enabled with "
                "jumper JP2 for bus 1 and jumper JP3 for bus 2.",
                "J6: USB-C port for firmware flashing and for pairing boards over a cable.",
                "WARNING: never plug an Ethernet device into J3 or J4; the bus ports carry 12 V DC for the "
                "probes.",
            ),
        ),
        Page(
            "4. Status LED and buttons",
            (
                "The status LED shows the state of the board: steady green when paired and healthy, red "
                "blinking twice per second on a sensor bus fault, purple while firmware is being updated.",
                "Holding the PAIR button for 15 seconds performs a factory reset: it erases the pairing "
                "keys and the stored probe list. The board then has to be paired again.",
                "The RESET button restarts the microcontroller without erasing anything.",
            ),
        ),
    ),
)

_SAFETY = PdfSpec(
    filename="safety-datasheet.pdf",
    title="Verdigris Node V2 Safety Datasheet",
    subject="Electrical safety, environmental limits and disposal",
    pages=(
        Page(
            "Electrical safety",
            (
                "Only a qualified electrician may connect the primary side of the transformer to the mains "
                "(230 V or 120 V). The 24 V AC side and everything connected to the board is a safety "
                "extra-low voltage (SELV) circuit.",
                "The greenhouse circuit that feeds the transformer must be protected by a residual-current "
                "device with a trip current of 30 mA.",
                "Switch off and lock out the supply before opening the enclosure.",
            ),
        ),
        Page(
            "Environmental limits",
            (
                "Operating temperature: -10 to +55 °C. Storage temperature: -25 to +70 °C.",
                "Relative humidity: up to 95 % non-condensing.",
                "The enclosure is rated IP65 only when every cable gland is fitted and tightened. Unused "
                "glands must be closed with the blanking plugs supplied.",
                "The enclosure is UV-stabilised polycarbonate. Do not mount it where irrigation water or "
                "fertiliser spray reaches it directly.",
            ),
        ),
        Page(
            "Disposal and compliance",
            (
                "The board is covered by the declaration of conformity VG-DoC-0042, available from the "
                "project on request.",
                "The real-time clock is backed by a CR2032 coin cell. Remove the cell before disposal and "
                "recycle it separately.",
                "Dispose of the board as electronic waste (WEEE). Do not put it in household waste.",
                "Report safety problems to safety@verdigris.example.",
            ),
        ),
    ),
)

_WIRING = PdfSpec(
    filename="wiring-quick-reference.pdf",
    title="Verdigris Wiring Quick Reference",
    subject="Valve, sensor bus and pump wiring at a glance",
    labels=(LabelRange(0, 2, "decimal", prefix="W-"),),
    pages=(
        Page(
            "Valves",
            (
                "Every solenoid valve has two wires. One goes to its own output terminal (V1 to V8), the "
                "other to the shared common terminal C.",
                "Use 1.5 mm² cable for runs up to 50 m and 2.5 mm² cable for longer runs, so the voltage "
                "drop does not stop the solenoid from pulling in.",
                "Label both ends of every valve cable with the valve name used in the configuration.",
            ),
        ),
        Page(
            "Sensor bus cable",
            (
                "The sensor bus uses RJ45 plugs wired as follows: pin 1 is A (data+), pin 2 is B (data-), "
                "pins 4 and 5 carry +12 V DC for the probes, pins 7 and 8 are ground.",
                "Use shielded Cat 5e cable or better and connect the shield at the node end only, to avoid "
                "ground loops.",
            ),
        ),
        Page(
            "Pumps",
            (
                "A pump is switched through a contactor whose 24 V AC coil is driven by the PUMP terminal.",
                "The PUMP terminal switches on 2 seconds before the first valve opens and off 5 seconds "
                "after the last valve closes, so the pump never runs against closed valves.",
                "Pumps up to 1.1 kW may be switched directly by a suitable contactor; larger pumps need a "
                "motor starter.",
            ),
        ),
    ),
)

DOCUMENTS: tuple[PdfSpec, ...] = (_HARDWARE, _SAFETY, _WIRING)

if __name__ == "__main__":
    sys.exit(main(sys.argv))
