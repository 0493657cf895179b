"""Table 4 and the tables of figures 5-7 (careval.careqa.statistics)."""

from careval.warm import offload

offload(snakemake, __file__)  # where the run has a warm worker, the job runs there (transformers already imported)

from pathlib import Path

from careval.canonical import job_of
from careval.careqa.statistics import write_careqa_statistics
from careval.joblog import job_log

with job_log(snakemake.log[0], snakemake.output):
    job = job_of(snakemake)
    sheets = {}  # <filled_sheets>/<kind>/<reviewer>.csv, by kind
    for path in snakemake.input.sheets:
        sheets.setdefault(Path(path).parent.name, []).append(path)
    write_careqa_statistics(
        snakemake.input.closed,
        snakemake.input.open,
        job.tokenizer,
        job.tokenizer_path,
        sheets,
        job.min_reviewers,
        snakemake.output,
    )
