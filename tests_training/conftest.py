"""The training tests run in onnxruntime-training's environment (onnxruntime-training-cpu 1.19.2, numpy 1.26,
onnx 1.16, this package installed with --no-deps: see .ci/run), which has no torch. torch's references come
from make_cases.py, run once per test session by a Python that has torch:

    RESAMPLE_GRAD_TORCH_PYTHON=/path/to/.venv/bin/python python -m pytest -q tests_training

(the interpreter running the tests is used instead when it can import torch). The forward models and
references go to a folder shared by the pytest-xdist workers; the first worker writes them, under a lock.
"""
from __future__ import annotations

import fcntl
import importlib.util
import os
import pathlib
import subprocess
import sys

import pytest

HERE = pathlib.Path(__file__).parent
sys.path.insert(0, str(HERE))


def torch_python() -> str:
    configured = os.environ.get("RESAMPLE_GRAD_TORCH_PYTHON")
    if configured:
        return configured
    if importlib.util.find_spec("torch") is not None:
        return sys.executable
    raise pytest.UsageError(
        "tests_training needs torch's references and this environment has no torch: set RESAMPLE_GRAD_TORCH_PYTHON "
        "to a Python with torch 2.13, onnx and onnxruntime (the README's test environment, e.g. .venv/bin/python)")


@pytest.fixture(scope="session")
def cases_dir(tmp_path_factory) -> pathlib.Path:
    """The folder of make_cases.py's models and references, written once for all workers."""
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # the base folder of all workers
    folder = shared / "training_cases"
    with open(shared / "training_cases.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / "done").exists():
            python = torch_python()
            result = subprocess.run([python, str(HERE / "make_cases.py"), str(folder)], capture_output=True, text=True,
                                    timeout=1200)
            if result.returncode != 0:
                raise RuntimeError(f"make_cases.py failed with {python}:\n{result.stderr[-4000:]}")
            (folder / "done").write_text(result.stdout)
    return folder
