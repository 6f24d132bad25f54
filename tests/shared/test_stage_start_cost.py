"""What a stage process loads before it serves: a stage is started often (`finq up`, each
restart after a crash, every test pipeline), so the heavy libraries only some settings use
are loaded by those settings, not by importing the stage."""

from __future__ import annotations

from shared.subjects import Stage
from tests.helpers import modules_loaded_by

# About a second each to import; a stage needs them only with a model or with MiniLM.
HEAVY = ("openai", "torch", "tokenizers", "safetensors")


def test_no_stage_imports_the_model_clients_until_its_settings_ask_for_them() -> None:
    loaded = modules_loaded_by(*(f"services.{stage.value}.main" for stage in Stage))

    assert [name for name in HEAVY if name in loaded] == []
