"""The README's training example runs (in a fresh process and an empty folder), and the example models of
models/training.py (resample-grad demo's training rows) learn."""
from __future__ import annotations

import importlib.util
import pathlib
import re
import subprocess
import sys

import resample_grad

README = pathlib.Path(__file__).parents[1] / "README.md"
BLOCKS = re.findall(r"^```python training\n(.*?)^```$", README.read_text(), re.M | re.S)


def test_readme_training_block_runs(tmp_path):
    assert len(BLOCKS) == 1
    result = subprocess.run([sys.executable, "-c", BLOCKS[0]], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"README training block:\n{BLOCKS[0]}\n{result.stderr[-4000:]}"
    losses = [float(line.split()[1]) for line in result.stdout.splitlines()]
    assert len(losses) == 5 and losses[-1] < losses[0], result.stdout


def _examples():
    """models/training.py of the installed package, loaded by path: resample_grad.models' __init__ imports
    resample_grad.opset, which needs onnx >= 1.20 (this environment may have onnx 1.16)."""
    path = pathlib.Path(resample_grad.__file__).parent / "models" / "training.py"
    spec = importlib.util.spec_from_file_location("resample_grad_training_examples", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_example_models_learn(tmp_path):
    examples = _examples()
    for name, (model, inputs, target, learning_rate) in examples.tasks().items():
        result = examples.train(model, inputs, target, learning_rate, 20, tmp_path / name)
        losses = result["losses"]
        assert losses[-1] < 0.5 * losses[0], f"{name}: losses {losses}"
