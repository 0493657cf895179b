"""Run a workflow-style script as Snakemake's `script:` directive does: in a fresh interpreter, with a
`snakemake` object in its globals and `__file__` naming the script. The job is a JSON object of `params`
(and optionally `threads`, `gpu`, `rule`, `wildcards`, and `input`, `output`, `log` as lists of paths); a param `loads` (model_spec's arguments) becomes
the `job` param of a job that loads that model. `--unreadable` adds to it an object of a module on this
script's path only, which a warm worker cannot unpickle; `--unpicklable` one that cannot be pickled at all."""

import json
import runpy
import sys
from types import SimpleNamespace

from only_on_the_scripts_path import OnlyHere


class Local:  # a class of __main__, which runpy replaces while the script runs: pickle cannot find it
    pass


script, job = sys.argv[1], json.loads(sys.argv[2])
if "loads" in job["params"]:
    # a job that loads a model: its spec as the plan passes it (params.job), here a judge's job
    from careval.canonical import JobParam
    from careval.models.spec import model_spec
    from careval.specs import JudgeJob

    loads = job["params"].pop("loads")
    job["params"]["job"] = JobParam(JudgeJob(judge=model_spec(**loads), options={}, request_batch=8))
snakemake = SimpleNamespace(
    params=SimpleNamespace(**job["params"]),
    input=job.get("input", SimpleNamespace()),
    output=job.get("output", []),
    log=job.get("log", []),
    threads=job.get("threads", 1),
    resources=SimpleNamespace(gpu=job.get("gpu", 0)),
    rule=job.get("rule", "test_rule"),
    wildcards=job.get("wildcards", {}),
)
if "--unreadable" in sys.argv:
    snakemake.params.extra = OnlyHere()
if "--unpicklable" in sys.argv:
    snakemake.params.extra = Local()
runpy.run_path(script, init_globals={"snakemake": snakemake}, run_name="__main__")
