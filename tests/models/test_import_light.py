"""``import agilerl.models`` must stay light: validating a spec never loads the engine."""

import json
import subprocess
import sys

import pytest

HEAVY = ["torch", "gymnasium", "transformers", "peft", "accelerate"]


def test_import_models_leaves_heavy_libraries_unimported():
    code = (
        "import sys, json; import agilerl.models; "
        "from agilerl.models import QNetworkSpec; "
        "QNetworkSpec(encoder_config={'arch': 'mlp', 'hidden_size': [8]}, head_config={'hidden_size': [8]}); "
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []


def test_heavy_check_can_fail():
    # The probe above must be able to see an imported module; prove it with json itself.
    code = "import sys, json; print(json.dumps('json' in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) is True


def test_import_agilerl_is_light_and_its_engine_names_load_on_use():
    code = (
        "import sys, json; import agilerl; "
        f"light = [m for m in {HEAVY!r} if m in sys.modules]; "
        "from agilerl import RLAlgorithm, LocalTrainer, evaluate_agent; "
        "print(json.dumps([light, RLAlgorithm.__module__, LocalTrainer.__module__, "
        "evaluate_agent.__module__, 'torch' in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    light, *modules, torch_loaded = json.loads(out.stdout)
    assert light == []
    assert modules == [
        "agilerl.algorithms.core.rl_algorithm",
        "agilerl.trainer",
        "agilerl.evaluation",
    ]
    assert torch_loaded


def test_unknown_names_of_agilerl_are_attribute_errors():
    import agilerl

    assert "RLAlgorithm" in dir(agilerl)
    with pytest.raises(AttributeError, match="no attribute 'RLAlgorithmm'"):
        agilerl.RLAlgorithmm  # noqa: B018


def test_the_trainer_and_every_family_load_without_the_optional_extras():
    # `pip install -e .` alone must run `agilerl train configs/ppo.yaml`: the family
    # table may not import PettingZoo, h5py or the LLM stack before a run of theirs.
    extras = ["pettingzoo", "mpe2", "h5py", "transformers", "peft", "datasets"]
    code = (
        "import sys, json; import agilerl.trainer, agilerl.families, agilerl.evaluation; "
        f"print(json.dumps([m for m in {extras!r} if m in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []
