"""MIR booklet and answer-key parsing, from text and through a generated PDF."""

from __future__ import annotations

import pytest

from careval.careqa.parse import extract_pdf_text, parse_answer_key, parse_booklet, parse_exam, parse_exam_pdf
from careval.careqa.pdf import read_exam_text, render_text_pdf

# Laid out like a MIR booklet: a cover with its own numbered instructions, a page footer and a repeated
# title inside question 2, a question over three lines, an annulled question (3), one with only three
# options (4) and one the key leaves out (6).
BOOKLET = """\
MINISTERIO DE SANIDAD
EXAMEN MIR 2023
INSTRUCCIONES
1. Compruebe que este cuadernillo lleva todas sus páginas.
2. Marque sus respuestas en la hoja de respuestas.
1. Varón de 45 años con dolor torácico
opresivo de dos horas de evolución.
¿Cuál es el diagnóstico más probable?
1. Infarto agudo de miocardio.
2. Pericarditis aguda.
3. Neumotórax.
4. Disección aórtica.
2. ¿Qué fármaco es de primera elección en la
hipertensión del embarazo?
1. Enalapril.
2. Labetalol.
- 1 -
EXAMEN MIR 2023
3. Losartán.
4. Espironolactona.
3. Pregunta anulada por el Ministerio.
1. Opción uno.
2. Opción dos.
3. Opción tres.
4. Opción cuatro.
4. Pregunta rota a la que le falta una opción.
1. Uno.
2. Dos.
3. Tres.
5. ¿Cuál es el principal reservorio de hierro?
1. Ferritina.
2. Transferrina.
3. Hemoglobina.
4. Hepcidina.
- 2 -
6. Pregunta que falta en la plantilla.
1. A.
2. B.
3. C.
4. D.
"""

KEY = """\
PLANTILLA DE RESPUESTAS CORRECTAS - Versión 0
EXAMEN MIR 2023
1 1   2 2
3 ANULADA
4 3
5 1
"""

TITLE = [r"EXAMEN MIR \d{4}"]


def _parse(booklet: str = BOOKLET, key: str = KEY):
    return parse_exam(booklet, key, exam_id=7, year=2023, category="Medicine", ignore=TITLE)


def test_counts_and_dropped_numbers():
    questions, report = _parse()
    assert [q.number for q in questions] == [1, 2, 5]
    assert (report.n_parsed, report.n_annulled, report.n_misparsed) == (3, 1, 2)
    assert report.annulled == (3,)
    assert set(report.misparsed) == {4, 6}
    assert "found [1, 2, 3]" in report.misparsed[4]
    assert report.misparsed[6] == "missing from answer key"
    assert report.dropped == (3, 4, 6)


def test_question_text_options_and_key_are_joined():
    questions, _ = _parse()
    first, second, fifth = questions
    assert first.question == (
        "Varón de 45 años con dolor torácico opresivo de dos horas de evolución. ¿Cuál es el diagnóstico más probable?"
    )
    assert first.options == ("Infarto agudo de miocardio.", "Pericarditis aguda.", "Neumotórax.", "Disección aórtica.")
    # The footer and the repeated title between options 2 and 3 must not leak into an option.
    assert second.options[1] == "Labetalol."
    assert (first.cop, second.cop, fifth.cop) == (1, 2, 1)
    assert (fifth.exam_id, fifth.year, fifth.category) == (7, 2023, "Medicine")


def test_extra_and_missing_options_are_counted_not_raised():
    booklet = "\n".join(
        [
            "1. Q one",
            "1. a",
            "2. b",
            "3. c",
            "4. d",
            "2. Q two with five options",
            "1. a",
            "2. b",
            "3. c",
            "4. d",
            "5. e",
            "3. Q three",
            "1. a",
            "2. b",
            "3. c",
            "4. d",
            "4. Q four has no options",
            "5. Q five",
            "1. a",
            "2. b",
            "3. c",
            "4. d",
        ]
    )
    good, bad = parse_booklet(booklet)
    assert sorted(good) == [1, 3, 5]
    assert bad == {2: "expected options 1-4, found [1, 2, 3, 4, 5]", 4: "expected options 1-4, found []"}


def test_question_absent_from_booklet_is_misparsed():
    booklet = "1. Q one\n1. a\n2. b\n3. c\n4. d\n3. Q three\n1. a\n2. b\n3. c\n4. d\n"
    _, report = parse_exam(booklet, "1 2\n2 3\n3 4\n", exam_id=1, year=2020, category="Nursing")
    assert report.n_parsed == 2
    assert report.misparsed == {2: "not found in booklet"}


def test_answer_key_variants():
    key, conflicts = parse_answer_key("Versión 0 2024\n1. 4\n2 0 3 -\n4 anulada\n5 2\n5 3\n6 7\n")
    assert key == {1: 4, 2: None, 3: None, 4: None, 5: 2}
    assert conflicts == {5}
    _, report = parse_exam("5. Q\n1. a\n2. b\n3. c\n4. d\n", "5 2\n5 3\n", exam_id=1, year=2020, category="Biology")
    assert report.misparsed[5] == "conflicting answer-key entries"
    # A booklet that starts at question 5 has lost 1-4, and the report says so.
    assert {report.misparsed[n] for n in (1, 2, 3, 4)} == {"not found in booklet"}


def test_empty_input_gives_empty_report():
    questions, report = parse_exam("", "", exam_id=1, year=2020, category="Chemistry")
    assert questions == [] and report.n_parsed == report.n_annulled == report.n_misparsed == 0


def _write_pdf(path, text: str) -> None:
    pytest.importorskip("matplotlib")
    render_text_pdf(text, path)


def test_pdf_text_round_trips(tmp_path):
    pytest.importorskip("pypdf")
    pdf = tmp_path / "booklet.pdf"
    _write_pdf(pdf, BOOKLET)
    assert extract_pdf_text(pdf).splitlines() == BOOKLET.splitlines()


def test_parse_through_pdf(tmp_path):
    pytest.importorskip("pypdf")
    booklet, key = tmp_path / "cuadernillo.pdf", tmp_path / "respuestas.pdf"
    _write_pdf(booklet, BOOKLET)
    _write_pdf(key, KEY)
    from_pdf = parse_exam_pdf(booklet, key, exam_id=7, year=2023, category="Medicine", ignore=TITLE)
    assert from_pdf == _parse()


@pytest.mark.parametrize("seed", range(40))
def test_damaged_booklets_never_raise_and_every_key_question_is_accounted_for(seed):
    import random

    rng = random.Random(seed)
    lines = BOOKLET.splitlines()
    for _ in range(rng.randint(1, 4)):
        action = rng.choice(["drop", "duplicate", "swap"])
        i = rng.randrange(len(lines))
        if action == "drop":
            del lines[i]
        elif action == "duplicate":
            lines.insert(i, lines[i])
        else:
            j = rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
    questions, report = _parse("\n".join(lines))
    parsed = {q.number for q in questions}
    assert not parsed & set(report.dropped)
    assert {1, 2, 3, 4, 5} <= parsed | set(report.dropped)
    assert all(len(q.options) == 4 and 1 <= q.cop <= 4 for q in questions)


def test_read_exam_text_sniffs_pdf_and_text(tmp_path):
    pytest.importorskip("pypdf")
    as_pdf, as_text = tmp_path / "booklet", tmp_path / "key.pdf"  # names deliberately misleading
    _write_pdf(as_pdf, KEY)
    as_text.write_text(KEY, encoding="utf-8")
    assert read_exam_text(as_pdf).splitlines() == read_exam_text(as_text).splitlines() == KEY.splitlines()
    (tmp_path / "junk").write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ValueError) as error:
        read_exam_text(tmp_path / "junk")
    assert str(error.value) == f"{tmp_path / 'junk'}:1: neither a PDF nor UTF-8 text (byte 0xff at column 1)"


def test_well_formed_question_before_question_five_is_kept():
    # Question 4 is followed by "5. ...", which the anchor test reads like an option 5; it must still parse.
    booklet = "\n".join(line for n in range(1, 8) for line in (f"{n}. Question {n}?", "1. a", "2. b", "3. c", "4. d"))
    key = "\n".join(f"{n} {1 + n % 4}" for n in range(1, 8))
    questions, report = parse_exam(booklet, key, exam_id=1, year=2024, category="Medicine")
    assert [q.number for q in questions] == list(range(1, 8))
    assert report.n_misparsed == 0
    assert questions[3].question == "Question 4?" and questions[3].options == ("a", "b", "c", "d")
    assert [q.cop for q in questions] == [1 + n % 4 for n in range(1, 8)]
    # and a broken question 5 right after it takes only itself down
    broken = booklet.replace("5. Question 5?\n1. a\n2. b\n3. c\n4. d", "5. Question 5?\n1. a\n2. b\n3. c")
    questions, report = parse_exam(broken, key, exam_id=1, year=2024, category="Medicine")
    assert [q.number for q in questions] == [1, 2, 3, 4, 6, 7]
    assert report.misparsed == {5: "expected options 1-4, found [1, 2, 3]"}
