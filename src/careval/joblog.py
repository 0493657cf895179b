"""Copy a job's stdout/stderr into its Snakemake log file while still showing them (progress bars included)."""
from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Iterator, TextIO


class _Tee:
    def __init__(self, *streams: TextIO) -> None:
        self.streams = streams

    def write(self, text: str) -> int:
        for stream in self.streams:
            stream.write(text)
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

            traceback.print_exc(file=log)
            raise
        finally:
            sys.stdout, sys.stderr = out, err
