"""Office documents and e-books: Word, PowerPoint, Excel, OpenDocument text and EPUB.

Word, PowerPoint and Excel files are read through python-docx, python-pptx and openpyxl, the `office`
extra (`pip install "rag-advisors[office]"`); without it such a file is reported with that line and the
run goes on. OpenDocument text and EPUB need nothing beyond the standard library. Every archive is
checked for its unpacked size before it is read (`archive.MAX_UNPACKED`).
"""

from ingest.readers.office.docx import read_docx
from ingest.readers.office.epub import read_epub
from ingest.readers.office.odt import read_odt
from ingest.readers.office.pptx import read_pptx
from ingest.readers.office.xlsx import read_xlsx

__all__ = ["read_docx", "read_epub", "read_odt", "read_pptx", "read_xlsx"]
