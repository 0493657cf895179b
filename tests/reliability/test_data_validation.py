"""Bad data never becomes a wrong number: every gold answer, option, id and field is checked at normalisation,
errors name the benchmark, the file, the 1-based line and the field, and skipped rows are counted."""

import json

import polars as pl
import pytest

from careval.datasets import SampleError, build_benchmark, get_benchmark
from careval.datasets.loaders import SourceError
from careval.datasets.normalise import EmptyBenchmarkError, report_path

GOOD = {"question": "Which vitamin deficiency causes scurvy?", "options": ["A", "B", "C", "D"]}


def _jsonl(path, rows, blank_after_first=False):
    lines = [json.dumps(row) for row in rows]
    if blank_after_first:  # physical lines count, blank or not
        lines.insert(1, "")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _mcqa(tmp_path, answer, answer_format, name="demo_mcqa"):
    """demo_mcqa (index0) or medqa (letter) / careqa_en (index1) from a local file whose line 4 holds `answer`."""
    fields = {
        "demo_mcqa": ("id", "question", "options", "answer"),
        "medqa": (None, "question", "options", "answer_idx"),
        "careqa_en": ("unique_id", "question", None, "cop"),
    }[name]
    id_field, _, options_field, answer_field = fields
    good = {"index0": 1, "index1": 2, "letter": "B"}[answer_format]
    rows = []
    for number, value in enumerate([good, good, answer]):
        row = {"question": f"{GOOD['question']} ({number})", answer_field: value}
        if id_field:
            row[id_field] = f"q{number}"
        if options_field:
            row[options_field] = GOOD["options"]
        else:
            row.update(op1="a", op2="b", op3="c", op4="d")
        rows.append(row)
    path = _jsonl(tmp_path / f"{name}.jsonl", rows, blank_after_first=True)
    return get_benchmark(name, {"path": str(path)}), path


@pytest.mark.parametrize(
    "name, answer_format, answer, expected",
    [
        ("medqa", "letter", "", "'' is not a valid letter answer (expected one letter from A to D)"),
        ("medqa", "letter", "CD", "'CD' is not a valid letter answer (expected one letter from A to D)"),
        ("medqa", "letter", "E", "'E' is not a valid letter answer (expected one letter from A to D)"),
        ("medqa", "letter", 2, "2 is not a valid letter answer (expected one letter from A to D)"),
        ("demo_mcqa", "index0", 1.7, "1.7 is not a valid index0 answer (expected an integer from 0 to 3)"),
        ("demo_mcqa", "index0", True, "True is not a valid index0 answer (expected an integer from 0 to 3)"),
        ("demo_mcqa", "index0", "", "'' is not a valid index0 answer (expected an integer from 0 to 3)"),
        ("demo_mcqa", "index0", "1 ", 1),  # digits with spaces (a CSV cell) are the integer
        ("demo_mcqa", "index0", 2.0, 2),  # an integral float (a spreadsheet's 2) is the integer
        ("demo_mcqa", "index0", -1, "-1 is not a valid index0 answer (expected an integer from 0 to 3)"),
        ("demo_mcqa", "index0", 4, "4 is not a valid index0 answer (expected an integer from 0 to 3)"),
        ("careqa_en", "index1", 0, "0 is not a valid index1 answer (expected an integer from 1 to 4)"),
        ("careqa_en", "index1", "4", 3),
        ("medqa", "letter", " c", 2),
    ],
)
def test_an_answer_must_be_exactly_valid_in_its_format(tmp_path, name, answer_format, answer, expected):
    entry, path = _mcqa(tmp_path, answer, answer_format, name)
    field = entry.fields["answer"]
    if isinstance(expected, int):  # a valid answer: its 0-based gold index
        samples = build_benchmark(entry, tmp_path / "out.parquet")
        assert samples["answer"].to_list()[-1] == expected
        return
    with pytest.raises(SampleError) as error:
        build_benchmark(entry, tmp_path / "out.parquet")
    # the third row is on line 4: a blank line 2 counts, as an editor counts it
    assert str(error.value) == f"{name}: {path}:4: field '{field}' = {expected}"
    assert not (tmp_path / "out.parquet").exists()


def test_a_text_answer_must_name_one_option(tmp_path):
    rows = [
        {"pubid": 1, "QUESTION": "Does it help?", "CONTEXTS": ["An abstract."], "final_decision": "yes"},
        {"pubid": 2, "QUESTION": "Does it harm?", "CONTEXTS": ["Another."], "final_decision": "yess"},
    ]
    path = _jsonl(tmp_path / "pqa.jsonl", rows)
    with pytest.raises(SampleError) as error:
        build_benchmark(get_benchmark("pubmedqa", {"path": str(path)}), tmp_path / "out.parquet")
    assert str(error.value) == (
        f"pubmedqa: {path}:2: field 'final_decision' = 'yess' is not a valid text answer "
        "(expected one of: 'yes', 'no', 'maybe')"
    )


@pytest.mark.parametrize(
    "row, expected",
    [
        (
            {"id": 1.5, "question": "q?", "options": ["a", "b"], "answer": 0},
            "field 'id' = 1.5 must be text or an integer (an id)",
        ),
        ({"id": " ", "question": "q?", "options": ["a", "b"], "answer": 0}, "field 'id' must be a non-empty id"),
        ({"question": "q?", "options": ["a", "b"], "answer": 0}, "missing field 'id'"),
        (
            {"id": "x", "question": 7, "options": ["a", "b"], "answer": 0},
            "field 'question' must be non-empty text, not int 7",
        ),
        (
            {"id": "x", "question": "q?", "options": ["a", 3], "answer": 0},
            "field 'options[1]' must be non-empty text, not int 3",
        ),
        (
            {"id": "x", "question": "q?", "options": "a|b", "answer": 0},
            "field 'options' must hold a list of options, not str 'a|b'",
        ),
        (
            {"id": "x", "question": "q?", "options": ["a"], "answer": 0},
            "field 'options' must hold at least two options",
        ),
        (
            {"id": "x", "question": "q?", "options": {"A": "a", "B": ""}, "answer": 0},
            "field 'options.B' must be non-empty text",
        ),
    ],
)
def test_every_field_is_checked_with_its_type(tmp_path, row, expected):
    good = {"id": "g", "question": "q?", "options": ["a", "b"], "answer": 1}
    path = _jsonl(tmp_path / "d.jsonl", [good, row])
    with pytest.raises(SampleError) as error:
        build_benchmark(get_benchmark("demo_mcqa", {"path": str(path)}), tmp_path / "out.parquet")
    assert str(error.value) == f"demo_mcqa: {path}:2: {expected}"


def test_context_must_be_text(tmp_path):
    rows = [{"pubid": 1, "QUESTION": "Does it help?", "CONTEXTS": {"text": "x"}, "final_decision": "yes"}]
    path = _jsonl(tmp_path / "pqa.jsonl", rows)
    with pytest.raises(SampleError) as error:
        build_benchmark(get_benchmark("pubmedqa", {"path": str(path)}), tmp_path / "out.parquet")
    assert (
        str(error.value)
        == f"pubmedqa: {path}:1: field 'CONTEXTS' must be text or a list of texts, not dict {{'text': 'x'}}"
    )


def test_json_errors_and_row_errors_count_lines_the_same_way(tmp_path):
    good = {"id": "a", "question": "q?", "options": ["x", "y"], "answer": 0}
    broken = tmp_path / "broken.jsonl"
    broken.write_text(
        "\n".join(
            [
                json.dumps(good),
                json.dumps({**good, "id": "b"}),
                json.dumps({**good, "id": "c"}),
                '{"id": "d", "question": ',  # line 4: cut short
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        "\n".join(
            [
                json.dumps(good),
                json.dumps({**good, "id": "b"}),
                json.dumps({**good, "id": "c"}),
                json.dumps({**good, "id": "d", "answer": "7"}),
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    with pytest.raises(SourceError) as error:
        build_benchmark(get_benchmark("demo_mcqa", {"path": str(broken)}), tmp_path / "o.parquet")
    assert str(error.value) == f"demo_mcqa: {broken}:4: invalid JSON (Expecting value)"
    with pytest.raises(SampleError) as error:
        build_benchmark(get_benchmark("demo_mcqa", {"path": str(bad)}), tmp_path / "o.parquet")
    assert str(error.value) == (
        f"demo_mcqa: {bad}:4: field 'answer' = '7' is not a valid index0 answer (expected an integer from 0 to 1)"
    )


def test_a_json_list_names_the_line_each_record_starts_on(tmp_path):
    records = [
        {"id": "a", "question": "q?", "options": ["x", "y"], "answer": 0},
        {"id": "b", "question": "q2?", "options": ["x", "y"], "answer": 9},
    ]
    path = tmp_path / "d.json"
    path.write_text(json.dumps(records, indent=2), encoding="utf-8")
    # json.dumps(indent=2) opens each record on a line "  {": the second one is line 11
    assert [n for n, line in enumerate(path.read_text().splitlines(), start=1) if line == "  {"] == [2, 11]
    with pytest.raises(SampleError) as error:
        build_benchmark(get_benchmark("demo_mcqa", {"path": str(path)}), tmp_path / "o.parquet")
    assert (
        str(error.value)
        == f"demo_mcqa: {path}:11: field 'answer' = 9 is not a valid index0 answer (expected an integer from 0 to 1)"
    )


def test_a_csv_row_is_named_by_the_line_it_starts_on(tmp_path):
    # the first transcription spans three lines (a quoted cell), so the second record starts on line 5
    path = tmp_path / "mts.csv"
    path.write_text(
        'transcription,medical_specialty\n"line one\nline two\nline three", Urology\nanother text, Urologyy\n',
        encoding="utf-8",
    )
    with pytest.raises(SampleError) as error:
        build_benchmark(
            get_benchmark("medical_transcriptions", {"path": str(path), "on_bad_row": "error"}), tmp_path / "o.parquet"
        )
    assert str(error.value) == (
        f"medical_transcriptions: {path}:5: field 'medical_specialty' = ' Urologyy' "
        "is not a valid text answer (expected one of the 40 options)"
    )


def test_a_csv_row_with_a_cell_too_many_is_an_error(tmp_path):
    path = tmp_path / "mts.csv"
    path.write_text("transcription,medical_specialty\ntext, Urology\ntext with, a comma, Urology\n", encoding="utf-8")
    with pytest.raises(SourceError) as error:
        build_benchmark(get_benchmark("medical_transcriptions", {"path": str(path)}), tmp_path / "o.parquet")
    assert str(error.value) == f"medical_transcriptions: {path}:3: 3 cells where the header has 2"


def test_an_xml_record_is_named_by_its_line(tmp_path):
    path = tmp_path / "mediqa.xml"
    path.write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n<Questions>\n'
        '<Question QID="1"><QuestionText>q?</QuestionText><AnswerList><Answer><AnswerText>a</AnswerText>'
        "</Answer></AnswerList></Question>\n"
        '<Question QID="2">\n<QuestionText>q2?</QuestionText>\n</Question>\n</Questions>\n',
        encoding="utf-8",
    )
    with pytest.raises(SampleError) as error:
        build_benchmark(get_benchmark("mediqa2019", {"format": "xml", "path": str(path)}), tmp_path / "o.parquet")
    assert str(error.value) == f"mediqa2019: {path}:4: missing field 'AnswerList[0].AnswerText'"


def test_skipped_rows_are_counted_in_the_report_beside_the_samples(tmp_path):
    entry, path = _mcqa(tmp_path, "CD", "letter", "medqa")
    entry = get_benchmark("medqa", {"path": str(path), "on_bad_row": "skip"})
    output = tmp_path / "datasets" / "medqa.parquet"
    samples = build_benchmark(entry, output)
    assert samples.height == 2
    assert report_path(output) == tmp_path / "datasets" / "medqa.json"
    assert json.loads(report_path(output).read_text()) == {
        "benchmark": "medqa",
        "source": str(path),
        "n_read": 3,
        "n_selected": 3,
        "n_rows": 3,
        "n_samples": 2,
        "n_skipped": 1,
        "skipped": [
            f"medqa: {path}:4: field 'answer_idx' = 'CD' is not a valid letter answer (expected one letter from A to D)"
        ],
    }
    assert pl.read_parquet(output).height == 2


@pytest.mark.parametrize(
    "case, overrides, expected",
    [
        ("empty file", {}, "demo_mcqa: no samples: the source has no rows"),
        (
            "misspelt select field",
            {"select": {"topik": "cardiology"}},
            "demo_mcqa: no samples: select: no row has the field 'topik'",
        ),
        (
            "select value matching nothing",
            {"select": {"topic": "cardiologyy"}},
            "demo_mcqa: no samples: select: topic = 'cardiologyy' matches none of the 2 rows (topic is one of: cardiology, renal)",
        ),
        ("every row skipped", {"on_bad_row": "skip"}, None),
    ],
)
def test_no_samples_stops_the_benchmark_saying_why(tmp_path, case, overrides, expected):
    path = tmp_path / "d.jsonl"
    if case == "empty file":
        path.write_text("\n", encoding="utf-8")
    else:
        answer = 9 if case == "every row skipped" else 0
        _jsonl(
            path,
            [
                {"id": "a", "question": "q?", "options": ["x", "y"], "answer": answer, "topic": "cardiology"},
                {"id": "b", "question": "r?", "options": ["x", "y"], "answer": answer, "topic": "renal"},
            ],
        )
    if expected is None:
        expected = (
            f"demo_mcqa: no samples: all 2 rows were skipped (on_bad_row: skip); the first: demo_mcqa: {path}:1: "
            "field 'answer' = 9 is not a valid index0 answer (expected an integer from 0 to 1)"
        )
    output = tmp_path / "out.parquet"
    with pytest.raises(EmptyBenchmarkError) as error:
        build_benchmark(get_benchmark("demo_mcqa", {"path": str(path), **overrides}), output)
    assert str(error.value) == expected
    assert not output.exists() and not report_path(output).exists()


def test_a_transform_keeping_nothing_is_named(tmp_path):
    path = _jsonl(tmp_path / "p.jsonl", [{"id": "1", "results": "{}"}])
    with pytest.raises(EmptyBenchmarkError) as error:
        build_benchmark(get_benchmark("prescription_easy", {"path": str(path)}), tmp_path / "o.parquet")
    assert (
        str(error.value) == "prescription_easy: no samples: the transform 'prescription_easy' kept none of the 1 rows"
    )


def test_a_json_dict_of_records_names_the_line_of_each_record(tmp_path):
    # PubMedQA's ori_pqal.json layout: {pmid: record}; a record starts where its value opens
    data = {
        "123": {"pubid": 123, "QUESTION": "q?", "CONTEXTS": ["c"], "final_decision": "no"},
        "456": {"pubid": 456, "QUESTION": "r?", "CONTEXTS": ["c"], "final_decision": "perhaps"},
    }
    path = tmp_path / "ori_pqal.json"
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    assert path.read_text().splitlines()[10 - 1] == '  "456": {'
    with pytest.raises(SampleError) as error:
        build_benchmark(get_benchmark("pubmedqa", {"path": str(path)}), tmp_path / "o.parquet")
    assert str(error.value) == (
        f"pubmedqa: {path}:10: field 'final_decision' = 'perhaps' is not a valid text answer "
        "(expected one of: 'yes', 'no', 'maybe')"
    )
