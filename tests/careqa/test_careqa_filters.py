"""The appendix A.2 negative-question filter."""

from __future__ import annotations

import pytest

from careval.careqa.filters import screen_question


@pytest.mark.parametrize(
    "question, term",
    [
        ("Which of the following statements is incorrect?", "incorrect"),
        ("All of the following are causes of anaemia EXCEPT:", "except"),
        ("Which of these statements is FALSE regarding asthma?", "false"),
        ("Which answer is not   correct about sepsis?", "not correct"),
        ("Which drug is NOT indicated in pregnancy?", "NOT"),
        ("Incorrect statement about lithium:", "incorrect"),
    ],
)
def test_negative_questions_are_dropped(question, term):
    decision = screen_question(question)
    assert not decision.keep
    assert repr(term) in decision.reason


@pytest.mark.parametrize(
    "question",
    [
        # Lower-case "not" asks for the right option; only the exam's stressed "NOT" is negative.
        "Which finding does not require imaging?",
        "Which drug is Not indicated?",
        # Whole words only: these contain a term inside a longer word.
        "Which is the exception to Dale's principle?",
        "Which is the most likely cause of a false-positive D-dimer?",
        "Which statement about NOTCH signalling is true?",
        "Which was incorrectly believed in the 19th century?",
        "What is the first-line treatment of hypertension?",
    ],
)
def test_ordinary_questions_are_kept(question):
    decision = screen_question(question)
    assert decision.keep and decision.reason is None


def test_term_at_sentence_edges_and_before_punctuation():
    assert not screen_question("NOT a cause of hypokalaemia:").keep
    assert not screen_question("True or false?").keep
    assert not screen_question("(except in children)").keep


@pytest.mark.parametrize(
    "question, term",
    [
        ("Señale la respuesta INCORRECTA sobre la insulina:", "incorrecta"),
        ("¿Cuál de los siguientes fármacos NO es un betabloqueante?", "NO"),
        ("Respecto a la EPOC, es FALSO que:", "falso"),
        ("Todos son signos de hipocalcemia excepto:", "excepto"),
        ("¿Qué afirmación no es correcta sobre la sepsis?", "no es correcta"),
    ],
)
def test_spanish_negative_questions_are_dropped(question, term):
    decision = screen_question(question, language="es")
    assert not decision.keep and repr(term) in decision.reason


@pytest.mark.parametrize(
    "question",
    [
        "¿Qué fármaco no requiere ajuste en la insuficiencia renal?",  # lower-case "no" asks for the right one
        "¿Cuál es la causa más probable de un falso positivo del dímero D?",  # the compound, as "false-positive"
        "¿Qué prueba tiene menos falsos negativos?",
        "¿Cuál es el tratamiento de elección de la NOTIFICACIÓN obligatoria?",
        "¿Cuál es el diagnóstico más probable?",
    ],
)
def test_spanish_ordinary_questions_are_kept(question):
    assert screen_question(question, language="es").keep


def test_languages_do_not_mix():
    # "NO" is only stressed in Spanish; in English it is an ordinary word ("NO2", "no").
    assert screen_question("Which is NO longer used?", language="en").keep
    assert not screen_question("Which is NO longer used?", language="es").keep
    with pytest.raises(ValueError, match="language"):
        screen_question("x", language="fr")
