"""Exam documents as text: extract a booklet or answer-key PDF with pypdf, and render text to a PDF for tests/demos."""

from __future__ import annotations

from pathlib import Path

from careval.textio import TextDecodeError, read_text


def extract_pdf_text(path: Path | str) -> str:
    # Imported here: only PDF booklets need it, and the text parsers import this module.
    try:
        from pypdf import PdfReader
    except ImportError:
        raise ImportError(f"{path}: reading exam PDFs needs pypdf (pip install 'pypdf>=4')") from None

    reader = PdfReader(str(path))
    # A newline between pages keeps the last line of one page from fusing with the first of the next.
    return "\n".join(page.extract_text() or "" for page in reader.pages)


def read_exam_text(path: Path | str) -> str:
    """The text of an acquired booklet or key, whatever its name: a PDF (by its magic bytes) or UTF-8 text."""
    path = Path(path)
    with open(path, "rb") as handle:
        is_pdf = handle.read(5) == b"%PDF-"
    if is_pdf:
        return extract_pdf_text(path)
    try:
        return read_text(path)
    except TextDecodeError as error:
        raise ValueError(f"{error.where}: neither a PDF nor UTF-8 text ({error.detail})") from None


def render_text_pdf(text: str, path: Path | str, lines_per_page: int = 30) -> None:
    """Lay text out line by line on A4 pages, as a booklet PDF would carry it (the demo exam ships as text)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.backends.backend_pdf import PdfPages

    lines = text.splitlines()
    # TrueType (42) rather than matplotlib's default Type 3 fonts, which pypdf cannot map back to text.
    with matplotlib.rc_context({"pdf.fonttype": 42}), PdfPages(path) as pdf:
        for start in range(0, max(len(lines), 1), lines_per_page):
            fig = plt.figure(figsize=(8.27, 11.69))
            for k, line in enumerate(lines[start : start + lines_per_page]):
                fig.text(0.05, 0.95 - 0.03 * k, line, fontsize=9)
            pdf.savefig(fig)
            plt.close(fig)
