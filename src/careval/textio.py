"""Read an input file as text with its encoding checked: a bad byte is one line naming the file, line and column."""

from __future__ import annotations

from pathlib import Path

BOM = "\ufeff"


class TextDecodeError(ValueError):
    """Bytes that are not text in the expected encoding; the message is `<file>:<line>: ...` (1-based)."""

    def __init__(self, where: str, encoding: str, detail: str) -> None:
        super().__init__(f"{where}: not valid {encoding} text ({detail}); re-save the file as {encoding}")
        self.where, self.encoding, self.detail = where, encoding, detail


def decode_text(data: bytes, path: str | Path, encoding: str = "utf-8") -> str:
    """`data` decoded, a leading byte-order mark dropped (spreadsheet exports write one)."""
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as error:
        # Python names only the byte offset; a user opens the file at a line.
        line_start = data.rfind(b"\n", 0, error.start) + 1
        line = data.count(b"\n", 0, error.start) + 1
        column = error.start - line_start + 1
        byte = data[error.start : error.end][:1]
        raise TextDecodeError(f"{path}:{line}", encoding.upper(), f"byte 0x{byte.hex()} at column {column}") from None
    return text[1:] if text.startswith(BOM) else text


def read_text(path: str | Path, encoding: str = "utf-8") -> str:
    """The whole file as text; OSError (missing, unreadable) is the caller's to word."""
    return decode_text(Path(path).read_bytes(), path, encoding)
