"""The parity tests' helpers (lm_eval_reference) sit beside them; lm-eval comes with the dev extra."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
