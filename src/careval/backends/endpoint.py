"""What a served model's two APIs share (careval.backends.openai): the key, the client of careval.backends.http_client
with the entry's limits, price and budget, the call's statuses and usage, and the log's line."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from careval.redaction import register_secret
from careval.request_cache import RequestCache

from .base import Usage
from .budget import Ledger
from .chat import SYSTEM_DELIMITER, maybe_delimit
from .http_client import OK, EndpointClient, EndpointError, Policy, Reply
from .limits import SharedLimits, endpoint_folder

DEFAULT_BASE_URL = "https://api.openai.com/v1"
TOP = 5  # the alternatives asked per generated step (OpenAI's completions API gives at most 5)


def read_key(api_key_env: str, where: str) -> str:
    """The key from the environment, checked before anything is sent (an unset key would be the server's 401)."""
    key = os.environ.get(api_key_env, "")
    if not key:
        raise EndpointError(
            f"{where}.api_key_env: {api_key_env} is not set (export the key; "
            f"a server that needs none accepts any value, e.g. {api_key_env}=EMPTY)"
        )
    register_secret(key)
    try:  # an HTTP header carries Latin-1 only: a key pasted with a typographic quote or a Cyrillic letter
        key.encode("latin-1")
    except UnicodeEncodeError as error:
        raise EndpointError(
            f"{where}.api_key_env: the value of {api_key_env} has a character an HTTP header "
            f"cannot carry (character {error.start + 1} of {len(key)} is not Latin-1); set it to the key exactly as issued"
        ) from None
    return key


class Endpoint:
    """What both APIs share: the key, the client (careval.backends.http_client), the log's line."""

    name: str
    model: str
    base_url: str
    client: EndpointClient
    last_usage: Sequence[Usage]
    last_status: Sequence[str]
    last_reused: int
    last_paid: Sequence[Usage] | None

    def _connect(
        self, name: str, model: str, base_url: str | None, settings: dict[str, Any], cache: str | None
    ) -> None:
        where = settings.get("config_key") or f"models.{name}"
        self.name, self.model, self.config_key = name, model, where
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        if settings.get("api_key"):  # a key of careval's own making (the shared engine's address file), not a config's
            self.api_key = str(settings["api_key"])
            register_secret(self.api_key)
        else:
            self.api_key = read_key(settings.get("api_key_env") or "OPENAI_API_KEY", where)
        policy = Policy(
            max_concurrency=max(1, int(settings.get("concurrency") or settings.get("max_concurrency") or 8)),
            requests_per_minute=settings.get("requests_per_minute"),
            tokens_per_minute=settings.get("tokens_per_minute"),
            timeout=float(settings.get("timeout") or 120.0),
            max_retries=int(settings["max_retries"]) if settings.get("max_retries") is not None else 6,
            backoff=float(settings["backoff"]) if settings.get("backoff") is not None else 1.0,
            max_backoff=float(settings["max_backoff"]) if settings.get("max_backoff") is not None else 60.0,
        )
        price = settings.get("price")
        price = (float(price["input_per_mtok"]), float(price["output_per_mtok"])) if price else None
        ledger = None
        if settings.get("max_cost") is not None and price is not None:
            longest = (policy.max_retries + 1) * (policy.timeout + policy.max_backoff) + 60
            ledger = Ledger(settings["ledger"], float(settings["max_cost"]), where, hold_s=longest)
        limits = None
        if settings.get("limits"):  # the endpoint's limits, held with every other process sending it requests
            folder = endpoint_folder(settings["limits"], self.base_url, model)
            try:
                limits = SharedLimits(
                    folder,
                    policy.max_concurrency,
                    policy.requests_per_minute,
                    policy.tokens_per_minute,
                    window=policy.window,
                    describe={"base_url": self.base_url, "model": model},
                )
            except OSError as error:  # a read-only cache folder: the job goes on, its limits its own
                print(f"careval warning: {folder}: {error}; {where}'s limits hold for this job alone", flush=True)
        # what decides an answer: the address, the served model, the API and the ids' tokenizer (not the key)
        scope = {"base_url": self.base_url, "model": model, "api": settings.get("api", "chat")}
        self.client = EndpointClient(
            self.base_url,
            self.api_key,
            model,
            policy,
            scope=scope,
            cache=RequestCache(cache) if cache else None,
            price=price,
            ledger=ledger,
            limits=limits,
            who=where,
        )
        self.concurrency = policy.max_concurrency
        self.max_retries, self.timeout = policy.max_retries, policy.timeout
        self.last_usage, self.last_status, self.last_reused, self.last_paid = [], (), 0, None

    @property
    def gpus(self) -> int:
        return 0  # the server's

    def _record(self, replies: Sequence[Reply]) -> None:
        """The call's usage, statuses and what was read from the request cache (careval.backends.cached)."""
        self.last_usage = [r.usage for r in replies]
        self.last_paid = [Usage(0, 0) if r.cached else r.usage for r in replies]
        self.last_reused = sum(r.cached for r in replies)
        statuses = [r.status for r in replies]
        self.last_status = statuses if any(s != OK for s in statuses) else ()

    def close(self) -> None:
        if getattr(self, "client", None) is not None:
            print(self.client.report(), flush=True)
            self.client.close()

    def system_turn(self, system_prompt: str | None, instruction: str | None) -> str:
        return maybe_delimit(system_prompt, instruction, SYSTEM_DELIMITER)


def endpoint_settings(spec: Any) -> dict[str, Any]:
    return {**(spec.endpoint or {}), "api": (spec.endpoint or {}).get("api", "chat")}
