"""Input files are read with their encoding checked: a bad byte is one line naming the file, the 1-based line and column."""

import json

import pytest

from careval.analysis.elo import EloFileError, read_elo
from careval.careqa.review import SheetError, read_sheets
from careval.datasets import build_benchmark, get_benchmark
from careval.datasets.loaders import SourceError
from careval.textio import read_text

LATIN1_E = b"\xe9"  # "é" written by a Latin-1 editor: not UTF-8


def _bad_third_line(lines: list[bytes]) -> bytes:
    lines = list(lines)
    lines[2] = lines[2].replace(b"fever", b"f" + LATIN1_E + b"ver")
    return b"\n".join(lines) + b"\n"


def _rows(n=4):
    return [
        {"id": f"q{i}", "question": f"Which drug lowers a fever ({i})?", "options": ["a", "b"], "answer": 0}
        for i in range(n)
    ]


@pytest.mark.parametrize("suffix", ["jsonl", "json", "csv", "xml"])
def test_a_bad_byte_in_a_benchmark_file_names_file_line_and_column(tmp_path, suffix):
    rows = _rows()
    if suffix == "jsonl":
        data = _bad_third_line([json.dumps(row).encode() for row in rows])
        entry = "demo_mcqa"
    elif suffix == "json":
        data = _bad_third_line(
            [b"["] + [json.dumps(row).encode() + b"," for row in rows[:-1]] + [json.dumps(rows[-1]).encode(), b"]"]
        )
        entry = "demo_mcqa"
    elif suffix == "csv":
        data = _bad_third_line(
            [b"transcription,medical_specialty"] + [f"{row['question']}, Urology".encode() for row in rows]
        )
        entry = "medical_transcriptions"
    else:
        data = _bad_third_line(
            [b"<Questions>"]
            + [
                f"<Question QID='{i}'><QuestionText>{row['question']}</QuestionText>"
                f"<AnswerList><Answer><AnswerText>x</AnswerText></Answer></AnswerList>"
                f"</Question>".encode()
                for i, row in enumerate(rows)
            ]
            + [b"</Questions>"]
        )
        entry = "mediqa2019"
    path = tmp_path / f"data.{suffix}"
    path.write_bytes(data)
    column = data.split(b"\n")[2].index(LATIN1_E) + 1
    overrides = {"path": str(path), **({"format": "xml"} if suffix == "xml" else {})}
    with pytest.raises(SourceError) as error:
        build_benchmark(get_benchmark(entry, overrides), tmp_path / "o.parquet")
    assert (
        str(error.value)
        == f"{entry}: {path}:3: not valid UTF-8 text (byte 0xe9 at column {column}); re-save the file as UTF-8"
    )


def test_an_xml_file_declaring_latin1_is_read_as_latin1(tmp_path):
    path = tmp_path / "q.xml"
    path.write_bytes(
        b'<?xml version="1.0" encoding="ISO-8859-1"?>\n<Questions><Question QID="1"><QuestionText>f'
        + LATIN1_E
        + b"ver?</QuestionText><AnswerList><Answer><AnswerText>rest</AnswerText></Answer>"
        b"</AnswerList></Question></Questions>\n"
    )
    samples = build_benchmark(get_benchmark("mediqa2019", {"format": "xml", "path": str(path)}), tmp_path / "o.parquet")
    assert samples["question"].to_list() == ["f\u00e9ver?"]


def test_a_utf8_byte_order_mark_is_dropped(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(_rows(1)[0]).encode() + b"\n")
    assert build_benchmark(get_benchmark("demo_mcqa", {"path": str(path)}), tmp_path / "o.parquet")["id"].to_list() == [
        "q0"
    ]
    assert read_text(path).startswith("{")


def test_a_bad_byte_in_the_elo_csv(tmp_path):
    path = tmp_path / "elo.csv"
    path.write_bytes(b"model,elo\nsmollm2,1000\ngemma-caf" + LATIN1_E + b",990\n")
    with pytest.raises(EloFileError) as error:
        read_elo(path)
    assert str(error.value) == f"{path}:3: not valid UTF-8 text (byte 0xe9 at column 10); re-save the file as UTF-8"


def test_a_bad_byte_in_a_review_sheet(tmp_path):
    path = tmp_path / "sheet.csv"
    path.write_bytes(b"item_id,reviewer,label\nq1,ana,correct\nq2,jos" + LATIN1_E + b",correct\n")
    with pytest.raises(SheetError) as error:
        read_sheets([path])
    assert str(error.value) == f"{path}:3: not valid UTF-8 text (byte 0xe9 at column 7); re-save the file as UTF-8"
