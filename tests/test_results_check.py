"""careval.results_check: a parquet file cut short is told from a whole one by its bytes alone, an intermediate
deleted after a job read it is found from what Snakemake recorded, a dataset made under other settings from its
report, and the index says which file is whose.
(The workflow's use of them, on a finished run: tests/workflow/test_reruns.py.)"""

from __future__ import annotations

import json

import polars as pl
import pytest

from careval.results_check import (
    cut_short,
    deleted_inputs,
    index_rows,
    job_digest,
    outdated_datasets,
    parquet_problem,
    result_files,
    stale_summary,
    write_index,
)


@pytest.fixture
def whole(tmp_path):
    path = tmp_path / "scores.parquet"
    pl.DataFrame({"id": [f"s{i}" for i in range(50)], "value": [i / 7 for i in range(50)]}).write_parquet(path)
    return path


@pytest.mark.parametrize(
    ("keep", "problem"),
    [
        (0.5, "cut short (no PAR1 at its end)"),
        (-1, "cut short (no PAR1 at its end)"),  # one byte short
        (8, "8 bytes, too short for a parquet file"),
    ],
)
def test_a_parquet_file_cut_short_is_told_from_a_whole_one(whole, keep, problem):
    assert parquet_problem(whole) is None
    data = whole.read_bytes()
    whole.write_bytes(data[: int(len(data) * keep)] if isinstance(keep, float) else data[:keep])
    assert parquet_problem(whole) == problem
    # and polars cannot read it either: the check agrees with the reader it protects
    with pytest.raises(pl.exceptions.ComputeError):
        pl.read_parquet(whole)


def test_other_bytes_or_a_footer_longer_than_the_file(whole):
    data = whole.read_bytes()
    whole.write_bytes(b"col1,col2\n" + data[10:])
    assert parquet_problem(whole) == "not a parquet file (no PAR1 at its start)"
    # the footer length (the 4 bytes before the last PAR1) says more than the file holds
    whole.write_bytes(data[:4] + data[-8:])
    assert parquet_problem(whole) == "cut short (its footer is longer than the file)"


def test_a_json_report_cut_short(tmp_path):
    report = tmp_path / "demo_mcqa.json"
    report.write_text('{"benchmark": "demo_mcqa", "n_skipped": 0}\n')
    assert cut_short([str(report)]) == {}
    report.write_text('{"benchmark": "demo_mcqa", "n_sk')
    assert cut_short([str(report)]) == {str(report): "not whole JSON (Unterminated string starting at)"}


def test_the_files_of_a_results_folder_leave_out_logs_index_and_report(tmp_path):
    for name in (
        "scores/m/b/rouge.parquet",
        "tables/table7.csv",
        "logs/score_open/m/b.log",
        "index.tsv",
        "report.html",
        "figures/logs/kept.png",  # a folder named logs below the top is a result's
    ):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    assert result_files(tmp_path) == [
        f"{tmp_path}/figures/logs/kept.png",
        f"{tmp_path}/scores/m/b/rouge.parquet",
        f"{tmp_path}/tables/table7.csv",
    ]
    assert cut_short(result_files(tmp_path)) == {
        f"{tmp_path}/scores/m/b/rouge.parquet": "1 bytes, too short for a parquet file"
    }


def test_an_input_deleted_after_a_job_read_it_is_found_with_the_file_it_made(tmp_path):
    (tmp_path / "summary.parquet").write_text("x")
    (tmp_path / "kept.parquet").write_text("x")
    recorded = {
        str(tmp_path / "summary.parquet"): [str(tmp_path / "gone.parquet"), str(tmp_path / "kept.parquet")],
        str(tmp_path / "kept.parquet"): None,  # no record (made before Snakemake kept them, or not by a job)
    }
    files = [str(tmp_path / "summary.parquet"), str(tmp_path / "kept.parquet")]
    assert deleted_inputs(files, recorded.get) == {str(tmp_path / "gone.parquet"): str(tmp_path / "summary.parquet")}


def test_the_index_marks_each_file_made_kept_or_stale(tmp_path):
    rows = index_rows(made=["r/b.parquet"], kept=["r/a.parquet", "r/b.parquet"], stale=["r/table7.csv", "r/a.parquet"])
    assert rows == [("r/a.parquet", "kept"), ("r/b.parquet", "made"), ("r/table7.csv", "stale")]
    write_index(tmp_path / "index.tsv", rows)
    assert pl.read_csv(tmp_path / "index.tsv", separator="\t").rows() == rows
    assert stale_summary(["a", "b", "c", "d", "e"]) == (
        "5 file(s) under the results folder are not made by this config (left by an earlier one): a, b, c and 2 more"
    )


def test_a_dataset_whose_report_names_another_job_is_outdated(tmp_path):
    reports = {name: tmp_path / f"{name}.json" for name in ("same", "other", "unrecorded", "missing", "broken")}
    reports["same"].write_text(json.dumps({"benchmark": "same", "made_by": job_digest("job A")}))
    reports["other"].write_text(json.dumps({"benchmark": "other", "made_by": job_digest("job A")}))
    reports["unrecorded"].write_text(json.dumps({"benchmark": "unrecorded"}))  # made before careval recorded it
    reports["broken"].write_text("{")
    planned = {str(path): job_digest("job B" if name == "other" else "job A") for name, path in reports.items()}
    assert outdated_datasets(planned) == {str(reports["other"]): job_digest("job A")}
    assert job_digest("job A") != job_digest("job B") and len(job_digest("job A")) == 16
