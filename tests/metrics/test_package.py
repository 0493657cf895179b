"""The metrics package imports without pulling in the heavy scoring libraries."""

from __future__ import annotations

import subprocess
import sys


def test_importing_metrics_stays_light():
    code = (
        "import sys, careval.metrics; "
        "heavy = [m for m in ('torch', 'transformers', 'bert_score', 'rouge_score', 'nltk') "
        "if m in sys.modules]; print(heavy); sys.exit(bool(heavy))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
