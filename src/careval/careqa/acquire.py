"""Acquire one MIR edition's booklet and answer key: download an address or copy a local file."""

from __future__ import annotations

import shutil
import urllib.error
import urllib.request
from pathlib import Path

# Where the Ministry of Health publishes past exams ("Cuadernos de examen" and the definitive answer
# sheets, "Hoja de respuestas", one per titulación and year). The portal is a single-page application,
# so there is no stable per-file URL pattern to derive: each edition's addresses (or files a user
# downloaded by hand) are written in the config, `careqa.editions[].booklet / key`.
MINISTRY_PORTAL = (
    "https://fse.sanidad.gob.es/fseweb/view/public/datosanteriores/cuadernosExamen/busquedaConvocatoria.xhtml"
)

# The six CareQA categories and the titulación of the MIR booklets each comes from.
CATEGORIES = {
    "medicine": "Medicina (MIR)",
    "nursing": "Enfermería (EIR)",
    "biology": "Biología (BIR)",
    "chemistry": "Química (QIR)",
    "psychology": "Psicología (PIR)",
    "pharmacology": "Farmacia (FIR)",
}


class AcquireError(RuntimeError):
    """A booklet or key that could not be fetched; the message is one line naming the address."""


def is_url(address: str) -> bool:
    return address.startswith(("http://", "https://"))


def acquire(address: str, destination: Path | str, timeout: float = 120.0) -> Path:
    """Put the document at `address` (an http(s) URL or a local path) at `destination`."""
    destination = Path(destination)
    destination.parent.mkdir(parents=True, exist_ok=True)
    # Written beside the target and renamed, so a failed download never leaves a half file behind.
    partial = destination.with_name(destination.name + ".part")
    if is_url(address):
        request = urllib.request.Request(address, headers={"User-Agent": "careval-careqa/0.1"})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response, open(partial, "wb") as out:
                shutil.copyfileobj(response, out)
        except urllib.error.HTTPError as error:
            partial.unlink(missing_ok=True)
            raise AcquireError(f"{address}: download failed with HTTP {error.code} {error.reason}") from None
        except (urllib.error.URLError, TimeoutError, OSError) as error:
            partial.unlink(missing_ok=True)
            raise AcquireError(f"{address}: download failed ({getattr(error, 'reason', error)})") from None
    else:
        source = Path(address)
        if not source.is_file():
            raise AcquireError(f"{address}: no such local file (cwd {Path.cwd()})")
        shutil.copyfile(source, partial)
    if partial.stat().st_size == 0:
        partial.unlink()
        raise AcquireError(f"{address}: empty document")
    partial.replace(destination)
    return destination


def edition_name(edition: dict) -> str:
    """The id of an edition in file names: year and category, e.g. 2024_medicine."""
    return f"{edition['year']}_{edition['category']}"


def acquire_edition(edition: dict, booklet_path: Path | str, key_path: Path | str) -> None:
    """Stage 1: the edition's booklet and answer key, each from its address or local file."""
    acquire(edition["booklet"], booklet_path)
    acquire(edition["key"], key_path)
