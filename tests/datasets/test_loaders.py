"""Source loaders: the Hugging Face `datasets` path (on a local dataset folder, offline) and local files."""

import json

import pytest

from careval.datasets import HFSource, LocalSource, get_benchmark, normalise
from careval.datasets.loaders import SourceError, read_source


def _write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_hf_datasets_path_reads_repo_config_split(tmp_path, shared_data):
    # `datasets.load_dataset(repo, config, split)` is the real code path; a local folder stands in
    # for the hub repo, with the real MeQSum rows as its train split.
    rows = [json.loads(line) for line in (shared_data / "meqsum" / "sample.jsonl").read_text().splitlines()][:20]
    repo = tmp_path / "meqsum_repo"
    (repo / "data").mkdir(parents=True)
    _write_jsonl(repo / "data" / "train.jsonl", rows)
    loaded = read_source(HFSource(repo=str(repo), split="train"))
    assert [r["CHQ"] for r in loaded] == [r["CHQ"] for r in rows]
    samples = normalise(loaded, get_benchmark("meqsum"))
    assert samples["reference"].to_list() == [r["Summary"] for r in rows]  # as written (row 15 ends in a space)


def test_hf_error_is_one_line_naming_the_repo(tmp_path):
    with pytest.raises(SourceError) as error:
        read_source(HFSource(repo=str(tmp_path / "nowhere"), config="x", split="test"))
    assert str(tmp_path / "nowhere") in str(error.value) and "\n" not in str(error.value)


def test_local_parquet_and_jsonl_agree(tmp_path):
    import polars as pl

    rows = [{"id": "a", "question": "Q?", "answer": "A."}, {"id": "b", "question": "R?", "answer": "B."}]
    _write_jsonl(tmp_path / "x.jsonl", rows)
    pl.DataFrame(rows).write_parquet(tmp_path / "x.parquet")
    assert read_source(LocalSource(str(tmp_path / "x.jsonl"))) == read_source(LocalSource(str(tmp_path / "x.parquet")))


def test_bad_local_files_are_named(tmp_path):
    (tmp_path / "bad.jsonl").write_text('{"id": 1}\n{not json}\n')
    with pytest.raises(SourceError, match=r"bad.jsonl:2: invalid JSON"):
        read_source(LocalSource(str(tmp_path / "bad.jsonl")))
    with pytest.raises(SourceError, match=r"missing.jsonl: file not found"):
        read_source(LocalSource(str(tmp_path / "missing.jsonl")))
