"""Keep secrets (API keys) out of every message and log: a process-wide list of secrets and the redactor."""

from __future__ import annotations

import json
import re

REDACTED = "[REDACTED]"
# Credentials as an HTTP header or a query string writes them, whoever's they are (a key this
# process never registered, e.g. a proxy's): a server that echoes the request puts them into its
# error body, which becomes our error message. Narrow on purpose, so ordinary text stays as written.
_CREDENTIALS = (
    re.compile(r"(?i)\b((?:bearer|basic)\s+)([A-Za-z0-9._~+/=-]{8,})"),
    re.compile(r"""(?i)\b((?:x-)?api[-_]?key["']?\s*[:=]\s*["']?)([^\s"',;}&]{8,})"""),
)
_secrets: set[str] = set()


def register_secret(value: str | None) -> None:
    """Redact `value` from every later `redact` call in this process (the backend that reads a key calls it),
    whatever its length: a short key garbles the text it redacts, which is the lesser harm than printing it."""
    if value:
        _secrets.add(value)
        # as JSON writes it (a server that echoes the request's headers as JSON escapes non-ASCII characters)
        _secrets.add(json.dumps(value)[1:-1])


def redact(text: str) -> str:
    """`text` with every registered secret and every header-like credential replaced by [REDACTED]."""
    for secret in sorted(_secrets, key=len, reverse=True):  # a key containing another is cut whole
        text = text.replace(secret, REDACTED)
    for pattern in _CREDENTIALS:
        text = pattern.sub(lambda match: match.group(1) + REDACTED, text)
    return text
