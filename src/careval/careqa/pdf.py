"""Extract the text of an exam PDF (booklet or answer key) page by page with pypdf."""
from __future__ import annotations

from pathlib import Path


def extract_pdf_text(path: Path | str) -> str:
    # Imported here so the text parsers work without pypdf (it is a dev extra, not a core dependency).
    from pypdf import PdfReader

    reader = PdfReader(str(path))
    # A newline between pages keeps the last line of one page from fusing with the first of the next.
    return "\n".join(page.extract_text() or "" for page in reader.pages)
