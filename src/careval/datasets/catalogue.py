"""The benchmark catalogue: every dataset of the paper's Table 1 (and the demo data) as a registry entry.

An entry of a Table 1 dataset names it (`paper_dataset`); the others (the demo data, HEAD-QA, MeQSum) are
careval's additions, marked as such wherever the paper's figures and tables show them.

Hub repos, configs, splits, fields and prompts follow the paper authors' own task definitions in
lm-evaluation-harness (lm_eval/tasks/{careqa,meddialog,mediqa_qa2019,medtext,mts_dialog,olaph,
med_prescriptions,med_text_classification,medmcqa,pubmedqa,medqa,mmlu,headqa}). Where the paper
used a file outside the hub (Kaggle, PhysioNet, GitHub), the entry is a local file whose `hint`
says how to get it. `formats` describe the layouts of the real samples in ../shared/data
(re-hosts, the original XML/BioC files), selected with the config override `format:`.
"""

from __future__ import annotations

from careval.datasets.benchmark import DEMO_DIR, Benchmark, HFSource, LocalSource

# bigbio's datasets are loading scripts; their parquet export (same configs and fields) is on this branch.
PARQUET = "refs/convert/parquet"

MCQA_PROMPT = "Question: {question}\nAnswer:"
# The authors' MCQA prompts (lm-eval 0.4.13): {options} fills as "A. ..." lines, and the letters
# " A".." D" are the continuations scored (mcqa_style "letters"; tasks/mcqa.py).
MEDQA_LETTERS_PROMPT = "Question: {question}\n{options}\nAnswer:"  # medqa/preprocess_medqa.py
CHOICES_LETTERS_PROMPT = "Question: {question}\nChoices:\n{options}\nAnswer:"  # medmcqa, careqa utils.py
PUBMEDQA_PROMPT = "Abstract: {context}\nQuestion: {question}\nAnswer:"  # pubmedqa/preprocess_pubmedqa.py


def _styled(style: str, letters: str, cloze: str) -> dict:
    """An MCQA entry's style keys: its default `style` and the prompt of each style (config `mcqa_style:`)."""
    prompts = {"letters": letters, "cloze": cloze}
    return {"mcqa_style": style, "prompt": prompts[style], "style_prompts": prompts}


OPEN_QA_PROMPT = (
    "You are a medical expert. Answer the following question accurately and concisely.\n\nQuestion: {question}\nAnswer:"
)
NOTE_PROMPT = (
    "Write the assessment and plan section of the clinical note for this doctor-patient "
    "conversation. Use only facts stated in the conversation.\n\n{question}\n\nNote:"
)

# The authors' open tasks are lm-eval generate_until tasks: the prompt is their `description` (a
# folded YAML scalar, so it ends in one newline) followed by doc_to_text(doc), with no answer cue,
# and generation stops at their `until` (tests/parity/test_open_prompts.py checks both on real rows).
# The descriptions are kept verbatim, slips included (careqa_open's stray quote, medtext's repeated
# sentence): they are what the paper's models were sent.
AUTHORS_UNTIL = ("\n\n",)


def _authors(description: str, text: str = "{question}") -> str:
    return f"Instructions: {description}\n{text}"


MMLU_MEDICAL = (
    "anatomy",
    "clinical_knowledge",
    "college_biology",
    "college_medicine",
    "medical_genetics",
    "professional_medicine",
)

# Schopf et al.'s five classes, in the order of condition_label 1..5 (medical_tc_labels.csv).
MEDICAL_ABSTRACT_CLASSES = (
    "neoplasms",
    "digestive system diseases",
    "nervous system diseases",
    "cardiovascular diseases",
    "general pathological conditions",
)
# The 40 MTSamples specialties as lm-eval's med_text_classification_hard lists them: each with the
# source's leading space, which their prompt shows (the list's repr) and their continuation keeps
# (target_delimiter " " + " Urology").
MTSAMPLES_SPECIALTIES = (
    " Bariatrics",
    " Allergy / Immunology",
    " Dentistry",
    " Cardiovascular / Pulmonary",
    " Urology",
    " Hospice - Palliative Care",
    " Radiology",
    " Pediatrics - Neonatal",
    " Neurology",
    " Neurosurgery",
    " Emergency Room Reports",
    " IME-QME-Work Comp etc.",
    " Office Notes",
    " Surgery",
    " Letters",
    " Ophthalmology",
    " Hematology - Oncology",
    " Endocrinology",
    " Cosmetic / Plastic Surgery",
    " Diets and Nutritions",
    " Rheumatology",
    " Nephrology",
    " Physical Medicine - Rehab",
    " Podiatry",
    " Chiropractic",
    " Lab Medicine - Pathology",
    " Orthopedic",
    " Autopsy",
    " Psychiatry / Psychology",
    " Speech - Language",
    " ENT - Otolaryngology",
    " Sleep Medicine",
    " Dermatology",
    " SOAP / Chart / Progress Notes",
    " General Medicine",
    " Consult - History and Phy.",
    " Obstetrics / Gynecology",
    " Gastroenterology",
    " Pain Management",
    " Discharge Summary",
)
# The authors' med_text_classification prompts (utils.py doc_to_text_easy / _hard), whitespace included.
CLASSIFICATION_PROMPT = (
    "Classify the topic of the following medical text into one of the following choices. \n"
    "Text: {question} \nChoices: \n{options:spaced}\n Answer:"
)
SPECIALTY_PROMPT = (
    "Select the medical specialty the following text is talking about among the following choices. \n"
    "Text: {question} \nChoices: {options:list}\n Answer:"
)
BIORED_PROMPT = (
    "Extract every relation between biomedical entities stated in the following PubMed abstract. "
    "Write one relation per line as: entity 1 | entity 2 | relation type, where the relation type is "
    "one of Association, Positive_Correlation, Negative_Correlation, Bind, Cotreatment, Comparison, "
    "Drug_Interaction, Conversion. Use the entity names as written in the text.\n\n{question}\n\nRelations:\n"
)

OLAPH_PROMPT = _authors(
    "You are a helpful healthcare assistant. Answer the following question as concisely as possible "
    "without omitting relevant information."
)
# MedLFQA: one file per subset in dmis-lab/MedLFQA (as in the dmis-lab/OLAPH GitHub repo).
MEDLFQA_SUBSETS = {
    "kqa_golden": "kqa_golden_test_MedLFQA.jsonl",
    "kqa_silver": "kqa_silver_wogold_test_MedLFQA.jsonl",
    "live_qa": "live_qa_test_MedLFQA.jsonl",
    "medication_qa": "medication_qa_test_MedLFQA.jsonl",
    "healthsearch_qa": "healthsearch_qa_test_MedLFQA.jsonl",
}
MEDLFQA_FIELDS: dict[str, str | list[str]] = {"question": "Question", "reference": "Free_form_answer"}
MEDLFQA_META = {"must_have": "Must_have", "nice_to_have": "Nice_to_have"}


def _mmlu(subject: str) -> Benchmark:
    topic = subject.replace("_", " ")
    return Benchmark(
        name=f"mmlu_{subject}",
        task="mcqa",
        paper_task="multiple_choice_questions",
        paper_dataset="MMLU",
        source=HFSource("cais/mmlu", config=subject, split="test"),
        fields={"question": "question", "options": "choices", "answer": "answer"},
        # lm-eval's mmlu/default (its `description` line, then doc_to_text) and, for cloze, mmlu/continuation
        **_styled(
            "letters",
            letters=f"The following are multiple choice questions (with answers) about {topic}.\n\n"
            "{question}\n{options}\nAnswer:",
            cloze=f"The following are questions (with answers) about {topic}.\n\nQuestion: {{question}}\nAnswer:",
        ),
        description=f"MMLU {subject.replace('_', ' ')} (test)",
        # the MLILAB-FedLLM re-host of the test CSVs: a header row, choice0..choice3, the answer as
        # a digit, every subject in one file (the sample adds `subject`)
        formats={
            "csv_rehost": {
                "fields": {
                    "question": "question",
                    "options": ["choice0", "choice1", "choice2", "choice3"],
                    "answer": "answer",
                },
                "select": {"subject": subject},
            }
        },
    )


def _medlfqa(subset: str, data_file: str) -> Benchmark:
    return Benchmark(
        name=f"olaph_{subset}",
        task="open",
        paper_task="medical_factuality",
        paper_dataset="OLAPH",
        source=HFSource("dmis-lab/MedLFQA", split="train", data_files=data_file),
        fields=MEDLFQA_FIELDS,
        prompt=OLAPH_PROMPT,
        description=f"OLAPH / MedLFQA {subset} subset (Must_have / Nice_to_have kept in meta)",
        meta_fields=MEDLFQA_META,
        on_bad_row="skip",  # a few MedLFQA rows have an empty Free_form_answer (live_qa row 70)
        stop=AUTHORS_UNTIL,
        min_chars=10,
    )


CATALOGUE: list[Benchmark] = [
    # --- the project's demo data -------------------------------------------------------------
    Benchmark(
        name="demo_mcqa",
        task="mcqa",
        paper_task="multiple_choice_questions",
        source=LocalSource(str(DEMO_DIR / "demo_mcqa.jsonl")),
        fields={"id": "id", "question": "question", "options": "options", "answer": "answer"},
        **_styled("cloze", letters=CHOICES_LETTERS_PROMPT, cloze=MCQA_PROMPT),
        description="careval demo: four-option medical MCQA written by the project",
        meta_fields=("topic",),
    ),
    Benchmark(
        name="demo_open_qa",
        task="open",
        paper_task="open_ended_medical_questions",
        source=LocalSource(str(DEMO_DIR / "demo_open_qa.jsonl")),
        fields={"id": "id", "question": "question", "reference": "answer"},
        prompt=OPEN_QA_PROMPT,
        description="careval demo: open-ended medical questions with reference answers",
        meta_fields=("topic",),
    ),
    Benchmark(
        name="demo_note",
        task="open",
        paper_task="clinical_note_taking",
        source=LocalSource(str(DEMO_DIR / "demo_note.jsonl")),
        fields={"id": "id", "question": "dialogue", "reference": "note"},
        prompt=NOTE_PROMPT,
        description="careval demo: doctor-patient dialogue to assessment-and-plan note",
    ),
    # --- close-ended: multiple-choice QA (the weighted MCQA average) ---------------------------
    Benchmark(
        name="medqa",
        task="mcqa",
        paper_task="multiple_choice_questions",
        paper_dataset="MedQA",
        source=HFSource("GBaker/MedQA-USMLE-4-options", split="test"),
        fields={"question": "question", "options": "options", "answer": "answer_idx"},
        **_styled("letters", letters=MEDQA_LETTERS_PROMPT, cloze=MCQA_PROMPT),
        answer_format="letter",
        description="MedQA (USMLE, 4 options)",
    ),
    Benchmark(
        name="medmcqa",
        task="mcqa",
        paper_task="multiple_choice_questions",
        paper_dataset="MedMCQA",
        # lm-eval's medmcqa: the validation split stands in for the test set (hidden answers)
        source=HFSource("openlifescienceai/medmcqa", split="validation"),
        fields={"id": "id", "question": "question", "options": ["opa", "opb", "opc", "opd"], "answer": "cop"},
        **_styled("letters", letters=CHOICES_LETTERS_PROMPT, cloze=MCQA_PROMPT),
        description="MedMCQA (validation split, 4 options)",
        meta_fields=("subject_name",),
        # the Medpredict re-host: `choices` prefixed "A. ".."D. ", 0-based `answer`, no id
        formats={
            "medpredict": {
                "fields": {"question": "question", "options": "choices", "answer": "answer"},
                "transform": "strip_option_letters",
                "meta_fields": (),
            }
        },
    ),
    Benchmark(
        name="pubmedqa",
        task="mcqa",
        paper_task="multiple_choice_questions",
        paper_dataset="PubMedQA",
        source=HFSource("bigbio/pubmed_qa", config="pubmed_qa_labeled_fold0_source", split="test", revision=PARQUET),
        fields={"id": "pubid", "question": "QUESTION", "context": "CONTEXTS", "answer": "final_decision"},
        choices=("yes", "no", "maybe"),
        answer_format="text",
        # lm-eval's pubmedqa scores the words yes/no/maybe (cloze); letters lists them as medmcqa does
        **_styled(
            "cloze",
            letters="Abstract: {context}\nQuestion: {question}\nChoices:\n{options}\nAnswer:",
            cloze=PUBMEDQA_PROMPT,
        ),
        description="PubMedQA (PQA-L, yes/no/maybe)",
    ),
    *[_mmlu(subject) for subject in MMLU_MEDICAL],
    Benchmark(
        name="careqa_en",
        task="mcqa",
        paper_task="multiple_choice_questions",
        paper_dataset="CareQA-Close",
        source=HFSource("HPAI-BSC/CareQA", config="CareQA_en", split="test"),
        fields={"id": "unique_id", "question": "question", "options": ["op1", "op2", "op3", "op4"], "answer": "cop"},
        **_styled("letters", letters=CHOICES_LETTERS_PROMPT, cloze=MCQA_PROMPT),
        answer_format="index1",
        description="CareQA-Close, English (Spanish MIR exams)",
        meta_fields=("category", "year"),
    ),
    Benchmark(
        name="careqa_es",
        task="mcqa",
        paper_task="multiple_choice_questions",
        paper_dataset="CareQA-Close",
        source=HFSource("HPAI-BSC/CareQA", config="CareQA_es", split="test"),
        fields={"id": "unique_id", "question": "question", "options": ["op1", "op2", "op3", "op4"], "answer": "cop"},
        # lm-eval's careqa_es includes careqa_en: the same English "Question:/Choices:/Answer:" frame
        **_styled("letters", letters=CHOICES_LETTERS_PROMPT, cloze="Pregunta: {question}\nRespuesta:"),
        answer_format="index1",
        description="CareQA-Close, Spanish",
        meta_fields=("category", "year"),
    ),
    # careval's addition (no paper_dataset): the paper names HEAD-QA only as CareQA's predecessor, not in Table 1
    Benchmark(
        name="headqa",
        task="mcqa",
        paper_task="multiple_choice_questions",
        source=HFSource("EleutherAI/headqa", config="en", split="test"),
        # qid repeats across exams, so the id is exam/qid (transform)
        fields={"id": "exam_qid", "question": "qtext", "options": "answers[].atext", "answer": "ra"},
        transform="headqa_ids",
        # lm-eval's headqa_en scores each answer's text (cloze) after "Question: {{qtext}}\nAnswer:"
        **_styled("cloze", letters=CHOICES_LETTERS_PROMPT, cloze=MCQA_PROMPT),
        answer_format="index1",
        description="HEAD-QA, English (Spanish healthcare specialisation exams)",
        meta_fields=("category", "year"),
    ),
    # --- close-ended beyond MCQA ---------------------------------------------------------------
    *[
        Benchmark(
            name=f"prescription_{level}",
            task="prescription",
            paper_task="prescriptions_writing",
            paper_dataset="Prescription",
            source=HFSource("devlocalhost/prescription-full", split="train"),
            # `listed`: the options the authors' prompt lists, their other draw (tasks/prescription.py)
            fields={
                "id": "id",
                "question": "diagnosis",
                "context": "listed",
                "options": "options",
                "answer": "gold_position",
            },
            transform=f"prescription_{level}",
            # the authors' med_prescriptions doc_to_text, whitespace included
            prompt=(
                "You are a medical doctor. A patient presents the following diagnosis or complains: "
                "{question}. What would you prescribe in this case? \nChoices: \n{context}\nAnswer:"
            ),
            # an empty diagnosis ("" is not their "NA", so they would ask "complains: .") is dropped and counted
            on_bad_row="skip",
            description=f"Prescription writing ({level}): pick the prescribed medicine among 4 (lm-eval med_prescriptions_{level})",
        )
        for level in ("easy", "hard")
    ],
    Benchmark(
        name="medical_text_classification",
        task="classification",
        paper_task="medical_text_classification",
        paper_dataset="Medical Text for classification",
        # the authors' med_text_classification_easy reads a CSV (class, text) of the Kaggle "Medical
        # Text" train file and keeps its first 10% of rows (process_docs)
        source=LocalSource(
            "data/med_text_class_train.csv",
            hint="the paper's Medical Text is Kaggle's 'Medical Text' (chaitanyakck/medical-text) train.dat "
            "(class<TAB>text) written as a CSV with columns class,text; point the benchmark's `path:` at it, "
            "or at Schopf et al.'s medical_tc_train.csv with `format: medical_abstracts`",
        ),
        fields={"question": "text", "answer": "class"},
        fraction=0.1,
        # Schopf et al.'s re-release (TimSchopf/medical_abstracts, sebischair/Medical-Abstracts-TC-Corpus):
        # the same abstracts and classes under other column names
        formats={
            "medical_abstracts": {
                "source": HFSource("TimSchopf/medical_abstracts", split="train"),
                "fields": {"question": "medical_abstract", "answer": "condition_label"},
            }
        },
        choices=MEDICAL_ABSTRACT_CLASSES,
        answer_format="index1",
        prompt=CLASSIFICATION_PROMPT,
        description="Medical Text for classification (Schopf et al. 2023): abstract -> one of 5 disease classes",
    ),
    Benchmark(
        name="medical_transcriptions",
        task="classification",
        paper_task="medical_text_classification",
        paper_dataset="Medical Transcriptions",
        source=LocalSource(
            "data/mtsamples.csv",
            hint="MTSamples is the Kaggle 'Medical Transcriptions' CSV (tboyle10/medicaltranscriptions): "
            "download mtsamples.csv and point the benchmark's `path:` override at it",
        ),
        fields={"question": "transcription", "answer": "medical_specialty"},
        choices=MTSAMPLES_SPECIALTIES,
        answer_format="text",
        prompt=SPECIALTY_PROMPT,
        # the Kaggle file has rows with an empty transcription: they are dropped and counted (lm-eval
        # would send "nan")
        on_bad_row="skip",
        description="Medical Transcriptions (MTSamples): transcription -> one of 40 specialties",
        meta_fields={"sample_name": "sample_name"},
    ),
    Benchmark(
        name="biored",
        task="extraction",
        paper_task="relation_extraction",
        paper_dataset="BioRED",
        # the paper links YufeiHFUT/BioRED_all_info; its rows are read as BioC documents (id, passages,
        # relations) like NCBI's release (Test.BioC.JSON), which `path:` can point at instead
        source=HFSource("YufeiHFUT/BioRED_all_info", split="test"),
        fields={"id": "id", "question": "text", "reference": "relations_text"},
        transform="biored_documents",
        prompt=BIORED_PROMPT,
        max_new_tokens=256,
        description="BioRED document-level relation extraction (entity, entity, relation type)",
        meta_fields=("relations", "entities"),
    ),
    # --- open-ended ----------------------------------------------------------------------------
    Benchmark(
        name="meddialog_raw",
        task="open",
        paper_task="open_ended_medical_questions",
        paper_dataset="MedDialog Raw",
        source=HFSource("bigbio/meddialog", config="meddialog_en_source", split="train", revision=PARQUET),
        fields={"question": "description", "reference": "utterances.utterance[1]"},
        prompt=_authors(
            "The following text is from a collection of medical dialogues. What follows is the patients "
            "question. Answer how a doctor would, trying to be as helpful as possible."
        ),
        stop=AUTHORS_UNTIL,
        description="MedDialog raw dialogues (English): the patient's description -> the doctor's reply",
    ),
    Benchmark(
        name="mediqa2019",
        task="open",
        paper_task="open_ended_medical_questions",
        paper_dataset="MEDIQA2019",
        source=HFSource("bigbio/mediqa_qa", config="mediqa_qa_source", split="test", revision=PARQUET),
        fields={
            "id": "QUESTION.QID",
            "question": "QUESTION.QuestionText",
            "reference": "QUESTION.AnswerList[0].Answer.AnswerText",
        },
        prompt=_authors(
            "The following text is a question asked by a patient. Answer how a doctor would, while trying "
            "to be as informative and helpful as possible."
        ),
        stop=AUTHORS_UNTIL,
        description="MEDIQA 2019 Task 3 QA: consumer question -> the first reference answer",
        # the original MEDIQA2019 XML (abachaa/MEDIQA2019), read by the xml loader
        formats={"xml": {"fields": {"id": "QID", "question": "QuestionText", "reference": "AnswerList[0].AnswerText"}}},
    ),
    Benchmark(
        name="careqa_open",
        task="open",
        paper_task="open_ended_medical_questions",
        paper_dataset="CareQA-Open",
        source=HFSource("HPAI-BSC/CareQA", config="CareQA_en_open", split="test"),
        fields={"id": "unique_id", "question": "question", "reference": "answer"},
        prompt=_authors(
            "The following text is a medical question. Answer it in the most factual, concise and "
            'informative way possible"'
        ),
        stop=AUTHORS_UNTIL,
        meta_fields=("category", "year"),  # figure 6 (careval.careqa.statistics)
        description="CareQA-Open: the CareQA questions rephrased as open questions",
    ),
    Benchmark(
        name="medtext",
        task="open",
        paper_task="diagnosis_and_treatment",
        paper_dataset="MedText",
        source=HFSource("BI55/MedText", split="train"),
        fields={"question": "Prompt", "reference": "Completion"},
        prompt=_authors(
            "The following text is from a collection of medical records. What follows is the patients "
            "record. Answer how a doctor would, what is the likely diagnosis, and what is the treatment?. "
            "Answer how a doctor would, what is the likely diagnosis, and what is the treatment?"
        ),
        stop=AUTHORS_UNTIL,
        description="MedText: patient record -> diagnosis and treatment",
    ),
    Benchmark(
        name="mts_dialog",
        task="open",
        paper_task="clinical_note_taking",
        paper_dataset="MTS-Dialog",
        source=HFSource("har1/MTS_Dialogue-Clinical_Note", split="train"),
        fields={"id": "ID", "question": "dialogue", "reference": "section_text"},
        prompt=_authors(
            "The following text is from a collection of medical dialogs between doctor and patient. "
            "Extract all relevant information to compose a note that summarizes the relevant content of the dialog."
        ),
        stop=AUTHORS_UNTIL,
        min_chars=5,
        description="MTS-Dialog: doctor-patient dialogue -> clinical note section",
        meta_fields=("section_header",),
    ),
    Benchmark(
        name="aci_bench",
        task="open",
        paper_task="clinical_note_taking",
        paper_dataset="ACI-Bench",
        source=LocalSource(
            "data/aci-bench/clinicalnlp_taskB_test1.csv",
            hint="ACI-Bench is on GitHub (wyim/aci-bench, data/challenge_data/clinicalnlp_taskB_test1.csv): "
            "download it and point the benchmark's `path:` override at it",
        ),
        fields={"id": "encounter_id", "question": "dialogue", "reference": "note"},
        # not one of the authors' lm-eval tasks: careval's own prompt, in their style, and no stop
        # string (a note has blank lines between its sections)
        prompt=(
            "Instructions: The following text is a conversation between a doctor and a patient during a visit. "
            "Write the clinical note of the visit.\n\n{question}\n\nNote:"
        ),
        description="ACI-Bench: full visit dialogue -> clinical note (test1)",
        meta_fields=("dataset",),
    ),
    Benchmark(
        name="olaph",
        task="open",
        paper_task="medical_factuality",
        paper_dataset="OLAPH",
        source=HFSource("dmis-lab/MedLFQA", split="test"),
        fields=MEDLFQA_FIELDS,
        prompt=OLAPH_PROMPT,
        stop=AUTHORS_UNTIL,
        min_chars=10,
        description="OLAPH / MedLFQA (all subsets); Must_have / Nice_to_have kept in meta for Relaxed Perplexity",
        meta_fields=MEDLFQA_META,
        on_bad_row="skip",
    ),
    *[_medlfqa(subset, data_file) for subset, data_file in MEDLFQA_SUBSETS.items()],
    Benchmark(
        name="mimic_iii_hospital_course",
        task="open",
        paper_task="summarization",
        paper_dataset="MIMIC-III",
        # credentialed data: never downloaded by careval
        source=LocalSource(
            "data/mimiciii-hospitalcourse.jsonl",
            hint="MIMIC-III is credentialed PhysioNet data (the paper used dmacres/mimiciii-hospitalcourse-meta): "
            "after obtaining access, point the benchmark's `path:` override at a jsonl/csv/parquet copy "
            "of it, with its column `extractive_notes_summ`",
        ),
        # lm-eval's mimic_repsum: the FINDINGS section of the report is the input, its IMPRESSION the reference
        fields={"question": "findings", "reference": "impressions"},
        transform="mimic_findings_impressions",
        prompt=_authors(
            "The following text is from a collection of medical records. Summarize the findings into diagnostic "
            "statements. Do not omit relevant information and avoid using abbreviations or jargon unless they "
            "appear in the original text.",
            "Given the findings: {question}.\nSummarize the findings.",
        ),
        stop=AUTHORS_UNTIL,
        min_chars=5,
        description="MIMIC-III report summarisation, findings -> impression (credentialed, local file only)",
        # a report with neither section has no input (the authors' metrics are NaN on it): skipped, counted
        on_bad_row="skip",
        extra_metrics=("radgraph",),
    ),
    Benchmark(
        name="meddialog_qsumm",
        task="open",
        paper_task="question_entailment",
        paper_dataset="Meddialog Qsumm",
        source=HFSource("lighteval/med_dialog", config="icliniq", split="test"),
        fields={"question": "src", "reference": "tgt"},
        prompt=_authors("The following text is contains a medical question. Extract and summarize the question."),
        stop=AUTHORS_UNTIL,
        description="MedDialog Qsumm (iCliniq): patient question -> summarised question",
    ),
    # careval's addition (no paper_dataset): lm-eval's meqsum, beside the paper's Meddialog Qsumm; not in Table 1
    Benchmark(
        name="meqsum",
        task="open",
        paper_task="question_entailment",
        source=HFSource("bigbio/meqsum", config="meqsum_source", split="train", revision=PARQUET),
        fields={"id": "File", "question": "message", "reference": "Summary"},
        transform="meqsum_message",
        # lm-eval's meqsum: meddialog_qsumm's instruction, over the message without its SUBJECT line
        prompt=_authors("The following text is contains a medical question. Extract and summarize the question."),
        stop=AUTHORS_UNTIL,
        description="MeQSum consumer health question summarisation",
    ),
]
