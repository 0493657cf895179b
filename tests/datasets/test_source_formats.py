"""Source formats beyond jsonl (XML, CSV, BioC JSON), nested field paths, bad rows (error / skip), missing local data."""

import csv
import json
import xml.etree.ElementTree as ElementTree

import pytest

from careval.datasets import SampleError, build_benchmark, get_benchmark, normalise
from careval.datasets.benchmark import LocalSource
from careval.datasets.definition import BenchmarkDefinitionError
from careval.datasets.loaders import SourceError, read_source
from careval.datasets.normalise import normalise_report, resolve


def _raw(shared_data, folder):
    return [json.loads(line) for line in open(shared_data / folder / "sample.jsonl", encoding="utf-8")]


def test_mediqa_xml_reads_back_the_rows_it_was_written_from(tmp_path, shared_data):
    # Write the MEDIQA2019 layout (<Question QID><QuestionText/><AnswerList><Answer AID ...>) from the
    # real rows with ElementTree, then read it with the loader: the rows must come back unchanged.
    rows = _raw(shared_data, "mediqa2019_qa")[:5]
    root = ElementTree.Element("MEDIQA2019-Task3-QA")
    for row in rows:
        question = ElementTree.SubElement(root, "Question", QID=row["QID"])
        ElementTree.SubElement(question, "QuestionText").text = row["QuestionText"]
        answers = ElementTree.SubElement(question, "AnswerList")
        for answer in row["AnswerList"]:
            element = ElementTree.SubElement(
                answers, "Answer", **{k: answer[k] for k in ("AID", "SystemRank", "ReferenceRank", "ReferenceScore")}
            )
            ElementTree.SubElement(element, "AnswerURL").text = answer["AnswerURL"]
            ElementTree.SubElement(element, "AnswerText").text = answer["AnswerText"]
    path = tmp_path / "mediqa.xml"
    ElementTree.ElementTree(root).write(path, encoding="utf-8")
    loaded = read_source(LocalSource(str(path)))
    assert [r["QID"] for r in loaded] == [r["QID"] for r in rows]
    assert [r["QuestionText"] for r in loaded] == [r["QuestionText"].strip() for r in rows]
    assert [[a["AnswerText"] for a in r["AnswerList"]] for r in loaded] == [
        [a["AnswerText"].strip() for a in r["AnswerList"]] for r in rows
    ]
    samples = build_benchmark(get_benchmark("mediqa2019", {"format": "xml", "path": str(path)}), tmp_path / "m.parquet")
    assert samples["reference"].to_list() == [r["AnswerList"][0]["AnswerText"].strip() for r in rows]


def test_csv_reads_every_column_as_text(tmp_path, shared_data):
    rows = _raw(shared_data, "mtsamples")[:20]
    path = tmp_path / "mtsamples.csv"
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    assert read_source(LocalSource(str(path))) == rows
    samples = build_benchmark(get_benchmark("medical_transcriptions", {"path": str(path)}), tmp_path / "t.parquet")
    # the authors list each specialty with the source's leading space
    assert samples.height == 20 and samples["options"][0][samples["answer"][0]] == rows[0]["medical_specialty"]


def test_bioc_collection_json_is_a_list_of_documents(tmp_path, shared_data):
    documents = _raw(shared_data, "biored")[:3]
    path = tmp_path / "Test.BioC.JSON.json"
    path.write_text(json.dumps({"source": "PubTator", "date": "", "key": "", "documents": documents}))
    assert read_source(LocalSource(str(path))) == documents


def test_json_dict_of_records_keeps_the_key(tmp_path):
    path = tmp_path / "ori_pqal.json"
    path.write_text(json.dumps({"123": {"QUESTION": "q?"}, "456": {"QUESTION": "r?"}}))
    assert read_source(LocalSource(str(path))) == [{"_key": "123", "QUESTION": "q?"}, {"_key": "456", "QUESTION": "r?"}]


def test_nested_field_paths():
    row = {
        "QUESTION": {"AnswerList": [{"Answer": {"AnswerText": "a"}}, {"Answer": {"AnswerText": "b"}}]},
        "answers": [{"atext": "x"}, {"atext": "y"}],
        "utterances": {"utterance": ["hi", "hello"]},
        "": "0",
    }
    assert resolve(row, "QUESTION.AnswerList[0].Answer.AnswerText") == "a"
    assert resolve(row, "QUESTION.AnswerList[].Answer.AnswerText") == ["a", "b"]
    assert resolve(row, "answers[].atext") == ["x", "y"]
    assert resolve(row, "utterances.utterance[1]") == "hello"
    assert resolve(row, "") == "0"
    missing = resolve(row, "utterances.utterance[5]")
    assert missing is resolve(row, "nope.deeper")  # the same "absent" marker


def test_missing_nested_field_is_named():
    with pytest.raises(
        SampleError, match=r"^mediqa2019: row 1: missing field 'QUESTION.AnswerList\[0\].Answer.AnswerText'$"
    ):
        normalise([{"QUESTION": {"QID": "1", "QuestionText": "q?", "AnswerList": []}}], get_benchmark("mediqa2019"))


@pytest.mark.parametrize("mode", ["error", "skip"])
def test_on_bad_row_error_or_skip(shared_data, mode):
    rows = _raw(shared_data, "medqa")[:10]
    rows[3] = {k: v for k, v in rows[3].items() if k != "answer_idx"}  # a missing field
    rows[6] = {**rows[6], "answer_idx": "F"}  # a malformed one: no option F of four
    entry = get_benchmark("medqa", {"on_bad_row": mode})
    if mode == "error":
        with pytest.raises(SampleError, match=r"^medqa: row 4: missing field 'answer_idx'$"):
            normalise(rows, entry)
    else:
        result = normalise_report(rows, entry)
        assert result.samples.height == 8
        assert result.skipped == [
            "medqa: row 4: missing field 'answer_idx'",
            "medqa: row 7: field 'answer_idx' = 'F' is not a valid letter answer (expected one letter from A to D)",
        ]


def test_missing_credentialed_file_says_how_to_provide_it(tmp_path):
    with pytest.raises(SourceError) as error:
        build_benchmark(get_benchmark("mimic_iii_hospital_course"), tmp_path / "x.parquet", root=tmp_path)
    message = str(error.value)
    assert "\n" not in message and message.startswith("mimic_iii_hospital_course: ")
    assert "file not found" in message and "`path:`" in message and "PhysioNet" in message


def test_unknown_format_lists_the_known_ones():
    with pytest.raises(
        BenchmarkDefinitionError, match=r"^benchmarks.medmcqa.format: unknown format 'csv' \(known: medpredict\)$"
    ):
        get_benchmark("medmcqa", {"format": "csv"})


def test_xlsx_first_sheet_with_a_header_row(tmp_path, shared_data):
    import openpyxl

    rows = _raw(shared_data, "meqsum")[:10]
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet.title = "QS"
    sheet.append(list(rows[0]))
    for row in rows:
        sheet.append(list(row.values()))
    path = tmp_path / "MeQSum.xlsx"
    workbook.save(path)
    assert read_source(LocalSource(str(path))) == rows
    samples = build_benchmark(get_benchmark("meqsum", {"path": str(path)}), tmp_path / "m.parquet")
    assert samples["reference"].to_list() == [r["Summary"].strip() for r in rows]
