"""The training examples of the documentation (README.md, CONTRIBUTING.md, docs/*.md) run (each in a fresh
process and an empty folder; one repeated word for word runs once), and the example models of
models/training.py (resample-grad demo's training rows) learn."""
from __future__ import annotations

import importlib.util
import pathlib
import re
import subprocess
import sys

import pytest


def _module(name: str, path: pathlib.Path):
    """The module at path, loaded by path (not through sys.path, where this folder's cases.py and conftest.py
    must keep their names)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


DOC_BLOCKS = _module("doc_blocks", pathlib.Path(__file__).parents[1] / "tests" / "doc_blocks.py")
BLOCKS = DOC_BLOCKS.blocks("python training")


def test_the_readme_has_a_training_block():
    assert re.search(r"^```python training$", (DOC_BLOCKS.ROOT / "README.md").read_text(), re.M)


@pytest.mark.parametrize("block", list(BLOCKS), ids=list(BLOCKS.values()))
def test_documented_training_block_runs(block, tmp_path):
    """The block prints one "step loss" line per step: five, the loss going down."""
    result = subprocess.run([sys.executable, "-c", block], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"{BLOCKS[block]}:\n{block}\n{result.stderr[-4000:]}"
    losses = [float(line.split()[1]) for line in result.stdout.splitlines()]
    assert len(losses) == 5 and losses[-1] < losses[0], result.stdout


def test_example_models_learn(tmp_path):
    # models/training.py of the installed package, loaded by path: resample_grad.models' __init__ imports
    # resample_grad.opset, which needs onnx >= 1.20 (this environment may have onnx 1.16). find_spec finds the
    # folder (in an editable install too) without running that __init__.
    folder = importlib.util.find_spec("resample_grad.models").submodule_search_locations[0]
    examples = _module("resample_grad_training_examples", pathlib.Path(folder) / "training.py")
    for name, (model, inputs, target, learning_rate) in examples.tasks().items():
        result = examples.train(model, inputs, target, learning_rate, 20, tmp_path / name)
        losses = result["losses"]
        assert losses[-1] < 0.5 * losses[0], f"{name}: losses {losses}"
