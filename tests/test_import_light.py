"""``import agilerl.models`` must stay light: validating a spec never loads the engine."""

import json
import subprocess
import sys

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
