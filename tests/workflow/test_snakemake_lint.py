"""`snakemake --lint` on the workflow: no lint at all (every rule carries its `conda:` environment,
workflow/envs/; tests/workflow/test_conda_envs.py checks those files)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def lints(workdir: Path, snakefile: Path) -> list[tuple[str, str]]:
    """(where, lint title) for every lint `snakemake --lint` prints (it exits 1 when there is any)."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")]),
        "HF_HUB_OFFLINE": "1",
    }
    snakemake = Path(sys.executable).with_name("snakemake")
    result = subprocess.run(
        [str(snakemake), "--lint", "--snakefile", str(snakefile), "--directory", str(workdir)],
        cwd=workdir,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    text = result.stdout + result.stderr
    assert result.returncode in (0, 1), text[-2000:]
    found, where = [], None
    for line in text.splitlines():
        if header := re.match(r"Lints for (.+?):$", line):
            where = header.group(1)
        elif item := re.match(r"    \* (.+?):$", line):
            found.append((where, item.group(1)))
    return found


def test_the_lint_parser_sees_a_planted_lint(tmp_path):
    # the mixed-file lint is given for included rule files, as workflow/rules/*.smk
    (tmp_path / "rules.smk").write_text(
        'def f(wildcards):\n    return "a"\n\n\nrule r:\n    input:\n        f\n'
        '    output:\n        "b"\n    log:\n        "r.log"\n    shell:\n'
        '        "cp {input} {output} 2> {log}"\n'
    )
    snakefile = tmp_path / "Snakefile"
    snakefile.write_text('include: "rules.smk"\n')
    titles = {title for _, title in lints(tmp_path, snakefile)}
    assert "Mixed rules and functions in same snakefile." in titles
    # the planted rule has no conda: the lint every careval rule answers
    assert "Specify a conda environment or container for each rule." in titles


def test_the_workflow_has_no_lint():
    found = lints(REPO, REPO / "Snakefile")
    assert [f"{where}: {title}" for where, title in found] == []
