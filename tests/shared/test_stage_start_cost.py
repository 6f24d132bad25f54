"""What a stage process loads before it serves: a stage is started often (`finq up`, each
restart after a crash, every test pipeline), so the heavy libraries only some settings use
are loaded by those settings, not by importing the stage."""

from __future__ import annotations

import subprocess
import sys

from shared.subjects import Stage
from tests.helpers import REPO_ROOT

# About a second each to import; a stage needs them only with a model or with MiniLM.
HEAVY = ("openai", "torch", "sentence_transformers")


def test_no_stage_imports_the_model_clients_until_its_settings_ask_for_them() -> None:
    stages = [f"services.{stage.value}.main" for stage in Stage]
    script = (
        "import importlib, sys\n"
        f"for name in {stages!r}:\n"
        "    importlib.import_module(name)\n"
        f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    ).stdout.split()

    assert loaded == []
