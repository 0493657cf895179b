"""Copy a job's stdout/stderr into its Snakemake log file while still showing them (progress bars included).

Everything written is passed through careval.redaction first, so a registered secret (an API key)
reaches neither the log nor the console. A secret split across two writes is not caught: the
messages that can carry one (error excerpts) are redacted whole where they are made.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from careval.redaction import redact


class _Tee:
    def __init__(self, *streams: TextIO) -> None:
        self.streams = streams

    def write(self, text: str) -> int:
        shown = redact(text)
        for stream in self.streams:
            stream.write(shown)
            stream.flush()
        return len(text)

    def flush(self) -> None:
        for stream in self.streams:
            stream.flush()

    def __getattr__(self, name: str):
        # anything else (close, fileno, encoding, ...) is the terminal stream's own
        return getattr(self.streams[0], name)

    def isatty(self) -> bool:
        return self.streams[0].isatty()


def _redacting_excepthook(kind, value, trace) -> None:
    import traceback

    sys.stderr.write(redact("".join(traceback.format_exception(kind, value, trace))))


@contextlib.contextmanager
def job_log(path: str | Path | None) -> Iterator[None]:
    if not path:
        yield
        return
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as log:
        out, err = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = _Tee(out, log), _Tee(err, log)
        try:
            yield
        except BaseException:
            import traceback

            log.write(redact(traceback.format_exc()))
            # the interpreter prints what is raised after the streams are restored: redacted too
            sys.excepthook = _redacting_excepthook
            raise
        finally:
            sys.stdout, sys.stderr = out, err
