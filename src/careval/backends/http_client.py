"""The transport of a served model (careval.backends.openai): JSON POSTs to an OpenAI-compatible server, as production
code sends them.

* Concurrency: a call's requests go ``max_concurrency`` at a time (a pool of threads kept for the job, each with its
  own keep-alive connection; a connection the server closed while idle is reopened, once, without counting a try).
* Rate limits: at most ``requests_per_minute`` requests and ``tokens_per_minute`` tokens (its prompt and the most it
  may generate) in any minute (careval.backends.limits.RateLimit); a request waits for its turn.
* Across processes: with a limits folder (a model entry's: ``<resources.cache_dir>/limits/``), the concurrency and both
  rates hold for every process sending to the same endpoint together (careval.backends.limits: flock-held slots, a
  shared sliding window), each try counted; without one (a test's client), for this process alone.
* Time: a request's every try is bounded by ``timeout`` seconds from sending it to its reply's last byte, so a server
  that drips its reply a byte at a time is a timeout, not a hang.
* Retries: a 429, a 408 or 5xx, a timeout, a dropped or refused connection and a malformed reply (not JSON, cut short,
  not the shape the caller's ``parse`` expects) are tried again up to ``max_retries`` times, after the server's
  ``Retry-After`` (seconds or an HTTP date) where it gives one, else ``backoff * 2**k`` seconds (at most
  ``max_backoff``) with equal jitter (half of it fixed, half drawn), so that many clients do not come back at once.
  A ``Retry-After`` beyond ``max_backoff`` stops the job (one line) rather than wait on without bound.
* Outcomes: a reply, parsed; after the retries a reply still malformed is the request's status ``malformed_reply``,
  and a 400, 413 or 422 (the server refuses this one request: too long, a parameter it lacks) ``endpoint_refused``,
  for the caller to count per sample; anything else (401, 403, 404, the retries spent on 429/5xx/timeouts) stops
  the job with one line (:class:`EndpointError`) naming the address, the status and the model, after the requests
  in flight have come back (none is lost).
* The request cache: every answered request is written to the request cache (careval.request_cache) the moment it
  arrives, under the digest of the endpoint's identity and the request's body; a killed or failed job, rerun, pays for
  none of them again. A malformed or refused one is not kept: it is asked again.
* Money: with a price, what each request cost (its usage); with a budget, careval.backends.budget holds back a
  request that could cross it, before it is sent.
* The key is sent, never written: every message passes through careval.redaction.
"""

from __future__ import annotations

import email.utils
import http.client
import json
import random
import ssl
import threading
import time
import urllib.parse
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

from careval.redaction import redact
from careval.request_cache import RequestCache, digest

from .base import Usage
from .budget import Ledger
from .limits import RateLimit, SharedLimits

OK, MALFORMED, REFUSED = "ok", "malformed_reply", "endpoint_refused"
RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
REFUSED_STATUS = frozenset({400, 413, 422})


class EndpointError(RuntimeError):
    """A server that refused the job's requests or stayed unavailable through the retries (one line)."""


class Malformed(ValueError):
    """A reply that is not what the request asks for (raised by a caller's `parse`)."""


class _Stopped(Exception):
    """A request not sent because another of the call stopped the job."""


@dataclass(frozen=True)
class Reply:
    """One request's outcome: its parsed value (None unless status is ok), its status, the tokens the server counted
    (its usage; zeros where it gives none) and whether it came from the request cache (nothing paid)."""

    value: Any
    status: str
    usage: Usage
    cached: bool = False


@dataclass(frozen=True)
class Request:
    """One POST: its path under the base URL (`/completions`), its JSON body, what parses its reply (raising
    Malformed) and the tokens it may cost at most (its prompt and max_tokens: the rate limit's and budget's count)."""

    path: str
    body: dict
    parse: Callable[[dict], Any]
    tokens: Usage = field(default_factory=lambda: Usage(0, 0))
    method: str = "POST"  # GET: a server's facts (/models, /tokenizer_info), no body sent


@dataclass(frozen=True)
class Policy:
    """How requests are sent (the endpoint's settings; the schema's `$defs/endpoint` has the defaults)."""

    max_concurrency: int = 8
    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None
    timeout: float = 120.0
    max_retries: int = 6
    backoff: float = 1.0
    max_backoff: float = 60.0
    window: float = 60.0  # the rates' window in seconds (a minute; a test's shorter one)


@dataclass
class Counts:
    """What the job's requests did (the log's line, the tests' assertions)."""

    sent: int = 0  # tries sent to the server (a retry is one more)
    answered: int = 0  # requests answered (status ok), paid
    cached: int = 0  # requests read from the request cache, not sent
    retries: Counter = field(default_factory=Counter)  # cause -> retries (429, 500, timeout, dropped, malformed)
    failed: Counter = field(default_factory=Counter)  # per-request status -> requests (malformed_reply, ...)
    prompt_tokens: int = 0  # of the answered requests (the server's usage)
    generated_tokens: int = 0
    cost: float = 0.0  # what the answered requests cost (with a price)
    waited: float = 0.0  # seconds spent backing off


def retry_after(value: str | None, now: float | None = None) -> float | None:
    """A Retry-After header's wait in seconds (a number, or an HTTP date); None where absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def backoff_delay(attempt: int, policy: Policy, draw: Callable[[], float] = random.random) -> float:
    """The wait before retry `attempt` (0 first): backoff * 2**attempt, at most max_backoff, half fixed, half drawn."""
    ceiling = min(policy.max_backoff, policy.backoff * 2**attempt)
    return ceiling / 2 + draw() * ceiling / 2


class _Failure(Exception):
    """One try that did not give a usable reply: its cause (for the counts), whether a retry may help, its line."""

    def __init__(self, cause: str, retry: bool, line: str, wait: float | None = None, detail: str = ""):
        super().__init__(line)
        self.cause, self.retry, self.line, self.wait, self.detail = cause, retry, line, wait, detail

    def message(self, url: str, model: str, after: str = "") -> str:
        """The one line: where, what, for which model (and after how many retries), then the server's own words."""
        return f"{url}: {self.line} for model {model!r}{after}" + (f": {self.detail}" if self.detail else "")


class EndpointClient:
    """The requests of one model's endpoint (see the module docstring). `scope`: the endpoint's identity (the request
    cache keys of its requests: what decides its answers, not how it is reached); `cache`: the request cache (None:
    off); `price`: (per million input, per million output tokens) or None; `ledger`: the budget's, or None;
    `who`: the model as messages name it (`models.gpt-x`)."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        model: str,
        policy: Policy,
        *,
        scope: Any,
        cache: RequestCache | None = None,
        price: tuple[float, float] | None = None,
        ledger: Ledger | None = None,
        limits: SharedLimits | None = None,
        who: str = "",
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        parsed = urllib.parse.urlsplit(self.base_url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise EndpointError(f"{who or model}: base_url {self.base_url!r} is not an http(s) address")
        self._scheme, self._host, self._port = parsed.scheme, parsed.hostname, parsed.port
        self._prefix = parsed.path.rstrip("/")
        self.api_key, self.model, self.policy, self.scope = api_key, model, policy, scope
        self.cache, self.price, self.ledger, self.who = cache, price, ledger, who or model
        self.sleep = sleep
        self.limit = RateLimit(policy.requests_per_minute, policy.tokens_per_minute, window=policy.window)
        self.limits = limits  # the endpoint's, across processes (careval.backends.limits); None: this process's
        self.counts = Counts()
        self._lock = threading.Lock()
        self._local = threading.local()
        self._pool: ThreadPoolExecutor | None = None
        self._stop: BaseException | None = None

    # ------------------------------------------------------------------ calls
    def post_all(self, requests: Sequence[Request]) -> list[Reply]:
        """Every request's reply, in order, `max_concurrency` at a time. A request that stops the job stops the ones
        not yet sent; the ones in flight come back (and are kept) before its error is raised."""
        if not requests:
            return []
        self._stop = None
        if len(requests) == 1 or self.policy.max_concurrency == 1:
            return [self._guarded(r) for r in requests]
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.policy.max_concurrency, thread_name_prefix="endpoint")
        futures: list[Future] = [self._pool.submit(self._guarded, r) for r in requests]
        wait(futures)
        errors = [e for f in futures if (e := f.exception()) is not None]
        real = [e for e in errors if not isinstance(e, _Stopped)]
        if real:
            raise real[0]
        if errors:
            raise errors[0]  # pragma: no cover  (a stop always has its cause)
        return [f.result() for f in futures]

    def post(self, request: Request) -> Reply:
        return self.post_all([request])[0]

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def key(self, request: Request) -> str:
        """The request cache's key of a request: the endpoint's identity, the path and the body."""
        return digest({"endpoint": self.scope, "path": request.path, "body": request.body})

    # ------------------------------------------------------------------ one request
    def _guarded(self, request: Request) -> Reply:
        if self._stop is not None:
            raise _Stopped()
        try:
            return self._one(request)
        except BaseException as error:
            self._stop = error
            raise

    def _one(self, request: Request) -> Reply:
        key = self.key(request)
        kept = self.cache is not None and request.method == "POST"  # a GET asks for the server's facts of now
        if kept and self.cache is not None:
            stored = self.cache.get(key)
            if isinstance(stored, dict) and isinstance(stored.get("value"), dict):
                try:
                    value = request.parse(stored["value"])
                except (Malformed, KeyError, IndexError, TypeError, ValueError):
                    value = None  # kept by another careval's parser: asked again
                else:
                    usage = Usage(*stored.get("usage", [[0, 0]])[0])
                    with self._lock:
                        self.counts.cached += 1
                    return Reply(value, OK, usage, cached=True)
        worst = self._cost(Usage(*request.tokens))
        hold = self.ledger.reserve(worst) if self.ledger is not None and request.method == "POST" else None
        paid = 0.0
        try:
            reply, paid = self._tries(request)
        finally:
            if self.ledger is not None and hold is not None:
                self.ledger.settle(hold, paid)
        if reply.status == OK and kept and self.cache is not None:
            try:
                self.cache.put(key, {"value": reply.value[1], "usage": [list(reply.usage)]})
            except OSError as error:  # a full cache disk costs a request again later, not this job
                print(f"cache: entry not written ({error}); the job goes on", flush=True)
        if reply.status == OK:
            return Reply(reply.value[0], OK, reply.usage)
        return reply

    def _tries(self, request: Request) -> tuple[Reply, float]:
        """(the reply: its value is (parsed, payload) when ok; what its tries cost)."""
        data = json.dumps(request.body).encode("utf-8") if request.method == "POST" else None
        waited = self.limit.acquire(sum(request.tokens)) if self.limits is None else 0.0
        paid = 0.0
        last: _Failure | None = None
        for attempt in range(self.policy.max_retries + 1):
            with self._lock:
                self.counts.sent += 1
                self.counts.waited += waited
            try:
                payload = self._send(request, data)
                usage = _usage(payload)
                paid += self._cost(usage)
                try:
                    parsed = request.parse(payload)
                except (Malformed, KeyError, IndexError, TypeError, ValueError) as error:
                    raise _Failure("malformed", True, f"a malformed reply ({_short(error)})") from None
            except _Failure as failure:
                last = failure  # (a malformed reply's tokens were counted as paid above)
                if not failure.retry:
                    if failure.cause == "refused":
                        with self._lock:
                            self.counts.failed[REFUSED] += 1
                        line = failure.message(self._url(request.path), self.model)
                        print(f"endpoint {self.who}: {line}; the request's samples are counted", flush=True)
                        return Reply(None, REFUSED, Usage(0, 0)), paid
                    raise EndpointError(failure.message(self._url(request.path), self.model)) from None
                if attempt == self.policy.max_retries:
                    break
                delay = backoff_delay(attempt, self.policy)
                if failure.wait is not None:
                    if failure.wait > self.policy.max_backoff:
                        after = f", asking to wait {failure.wait:.0f}s (more than max_backoff, {self.policy.max_backoff:g}s)"
                        raise EndpointError(failure.message(self._url(request.path), self.model, after)) from None
                    delay = max(failure.wait, 0.0)
                with self._lock:
                    self.counts.retries[failure.cause] += 1
                self.sleep(delay)
                waited = delay
                continue
            with self._lock:
                self.counts.answered += 1
                self.counts.prompt_tokens += usage.prompt
                self.counts.generated_tokens += usage.generated
                self.counts.cost += self._cost(usage)
            return Reply((parsed, payload), OK, usage), paid
        assert last is not None
        if last.cause == "malformed":
            with self._lock:
                self.counts.failed[MALFORMED] += 1
            print(f"endpoint {self.who}: {last.line} after {self.policy.max_retries} retries; counted", flush=True)
            return Reply(None, MALFORMED, Usage(0, 0)), paid
        raise EndpointError(
            last.message(self._url(request.path), self.model, f" after {self.policy.max_retries} retries")
        )

    def _send(self, request: Request, data: bytes | None) -> dict:
        """One try, in one of the endpoint's slots and at its rates' turn where they are shared across processes."""
        if self.limits is None:
            return self._exchange(request.path, data, request.method)
        with self.limits.slot() as waited:
            waited += self.limits.acquire(sum(request.tokens))
            with self._lock:
                self.counts.waited += waited
            return self._exchange(request.path, data, request.method)

    def _cost(self, usage: Usage) -> float:
        if self.price is None:
            return 0.0
        return (usage.prompt * self.price[0] + usage.generated * self.price[1]) / 1e6

    # ------------------------------------------------------------------ HTTP
    def _url(self, path: str) -> str:
        return f"{self.base_url}{path}"

    def _connection(self, timeout: float) -> http.client.HTTPConnection:
        if self._scheme == "https":
            return http.client.HTTPSConnection(
                self._host, self._port, timeout=timeout, context=ssl.create_default_context()
            )
        return http.client.HTTPConnection(self._host, self._port, timeout=timeout)

    def _exchange(self, path: str, data: bytes | None, method: str = "POST") -> dict:
        """One try: POST, and the reply's JSON; a _Failure otherwise."""
        deadline = time.monotonic() + self.policy.timeout
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "Authorization": f"Bearer {self.api_key}",
            "User-Agent": "careval",
        }
        for fresh in (False, True):
            connection = None if fresh else getattr(self._local, "connection", None)
            reused = connection is not None
            if connection is None:
                connection = self._connection(self.policy.timeout)
            self._local.connection = connection
            try:
                status, reply_headers, body = self._roundtrip(
                    connection, method, self._prefix + path, data, headers, deadline
                )
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as error:
                self._drop()
                if reused and not getattr(error, "_careval_answered", False):
                    continue  # an idle keep-alive connection the server had closed: once more, on a new one
                raise _Failure("dropped", True, f"the connection dropped ({_short(error)})") from None
            except TimeoutError:
                self._drop()
                raise _Failure("timeout", True, f"no whole reply within {self.policy.timeout:g}s") from None
            except (http.client.IncompleteRead, http.client.HTTPException, ConnectionError, OSError) as error:
                self._drop()
                if isinstance(error, ConnectionRefusedError) or "refused" in str(error).lower():
                    raise _Failure("unreachable", True, f"unreachable ({_short(error)})") from None
                raise _Failure("dropped", True, f"the connection dropped ({_short(error)})") from None
            return self._outcome(status, reply_headers, body)
        raise AssertionError("unreachable")  # pragma: no cover

    def _roundtrip(
        self,
        connection: http.client.HTTPConnection,
        method: str,
        path: str,
        data: bytes | None,
        headers: dict,
        deadline: float,
    ) -> tuple[int, dict, bytes]:
        def left() -> float:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError()
            return remaining

        if connection.sock is not None:
            connection.sock.settimeout(left())
        connection.request(method, path, body=data, headers=headers)
        sock = connection.sock  # the reply reads from it even where the connection lets go of it (Connection: close)
        assert sock is not None  # request() connected it
        sock.settimeout(left())
        response = connection.getresponse()
        chunks = []
        try:
            while True:
                sock.settimeout(left())
                chunk = response.read1(65536)
                if not chunk:
                    break
                chunks.append(chunk)
            response.close()  # read whole: the connection may send the next request (else CannotSendRequest)
        except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as error:
            error._careval_answered = True  # type: ignore[attr-defined]  (not a stale connection: it answered)
            raise
        if response.will_close:
            self._drop()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, b"".join(chunks)

    def _drop(self) -> None:
        connection = getattr(self._local, "connection", None)
        self._local.connection = None
        if connection is not None:
            try:
                connection.close()
            except OSError:
                pass

    def _outcome(self, status: int, headers: dict, body: bytes) -> dict:
        if 200 <= status < 300:
            try:
                payload = json.loads(body.decode("utf-8"))
            except (UnicodeDecodeError, ValueError):
                raise _Failure("malformed", True, f"a reply that is not JSON ({len(body)} bytes)") from None
            if not isinstance(payload, dict):
                raise _Failure("malformed", True, "a reply that is not a JSON object")
            return payload
        # redacted before it is cut: a key straddling the cut would leave its first part
        detail = redact(body.decode("utf-8", "replace"))[:200].replace("\n", " ")
        line = f"HTTP {status}"
        if status in RETRYABLE_STATUS or status >= 500:
            raise _Failure(str(status), True, line, wait=retry_after(headers.get("retry-after")), detail=detail)
        if status in REFUSED_STATUS:
            raise _Failure("refused", False, line, detail=detail)
        raise _Failure(str(status), False, line, detail=detail)

    # ------------------------------------------------------------------ the log's line
    def report(self) -> str:
        c = self.counts
        retries = ", ".join(f"{cause}: {n}" for cause, n in sorted(c.retries.items())) or "none"
        failed = ", ".join(f"{status}: {n}" for status, n in sorted(c.failed.items())) or "none"
        money = f", cost {c.cost:.4f}" if self.price is not None else ""
        budget = f" ({self.ledger.describe()})" if self.ledger is not None else ""
        return (
            f"endpoint {self.who}: {c.answered} requests answered, {c.cached} from the request cache, {c.sent} tries "
            f"sent; retries {retries}; failed {failed}; {c.prompt_tokens} prompt and {c.generated_tokens} generated "
            f"tokens{money}{budget}"
        )


def _usage(payload: dict) -> Usage:
    counted = payload.get("usage")
    counted = counted if isinstance(counted, dict) else {}
    try:
        return Usage(int(counted.get("prompt_tokens") or 0), int(counted.get("completion_tokens") or 0))
    except (TypeError, ValueError):
        return Usage(0, 0)


def _short(error: BaseException) -> str:
    return redact(str(error) or type(error).__name__)[:120].replace("\n", " ")
