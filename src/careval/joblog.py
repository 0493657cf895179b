"""Copy a job's stdout/stderr into its Snakemake log file while still showing them (progress bars included).

Everything written is passed through careval.redaction first, so a registered secret (an API key)
reaches neither the log nor the console. A secret split across two writes is not caught: the
messages that can carry one (error excerpts) are redacted whole where they are made.
"""

from __future__ import annotations

import contextlib
import errno
import shutil
import sys
from collections.abc import Iterator, Sequence
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


def disk_full(error: BaseException) -> OSError | str | None:
    """The full-disk error in `error`'s chain: an OSError (ENOSPC, EDQUOT), or the text of a library's error that
    wraps one without its path (polars: "No space left on device (os error 28)"); None if none."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, OSError) and seen.errno in (errno.ENOSPC, errno.EDQUOT):
            return seen
        if "No space left on device" in str(seen) or "os error 28" in str(seen):
            return str(seen)
        seen = seen.__cause__ or seen.__context__
    return None


def disk_full_message(error: OSError | str, outputs: Sequence[str]) -> str:
    """One line: what was being written (the file, else the job's outputs) and that the disk is full."""
    written = getattr(error, "filename", None) if isinstance(error, OSError) else None
    files = [str(written)] if written else [str(path) for path in outputs]
    where = files[0] + (f" (or another of this job's {len(files)} outputs)" if len(files) > 1 else "")
    folder = Path(files[0]).parent if files else Path.cwd()
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    free = shutil.disk_usage(folder).free
    return (
        f"no space left on device writing {where}: {free / 2**20:.0f} MB free under {folder}; "
        f"free some space and type the same command again"
    )


@contextlib.contextmanager
def job_log(path: str | Path | None, outputs: Sequence[str] = ()) -> Iterator[None]:
    """Tee the job's output into its log; a full disk ends the job with one line naming what it was writing
    (`outputs`: the job's output files, named when the error does not say which file), and so does an error
    whose class says its message is all there is to say (`one_line = True`)."""
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
            error = sys.exc_info()[1]
            full = disk_full(error)  # type: ignore[arg-type]
            if full is not None or getattr(error, "one_line", False):
                # the cause in one line on the console (the traceback is in the log)
                message = disk_full_message(full, outputs) if full is not None else str(error)
                log.write(message + "\n")
                raise SystemExit(message) from None
            # the interpreter prints what is raised after the streams are restored: redacted too
            sys.excepthook = _redacting_excepthook
            raise
        finally:
            sys.stdout, sys.stderr = out, err


def requests_record(log: str | Path) -> Path:
    """Where an LLM job writes its request counts (careval.backends.cached): beside its log, the same path under
    <results>/logs as its time under <results>/benchmarks, so the cost table (careval.analysis.cost) pairs them."""
    return Path(log).with_suffix(".requests.json")
