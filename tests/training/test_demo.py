"""The demo's training part: the stored step models trained on plain onnxruntime beside torch's loss curve, live or
recorded; a curve that leaves torch's, or a loss that does not halve, fails it."""
from __future__ import annotations

import subprocess
import sys
import xml.dom.minidom

import numpy as np

from resample_grad import cli
from resample_grad.models import optimizer_steps


def test_training_demo_follows_torch_live(tmp_path, capsys):
    assert cli._training_demo(tmp_path, threads=1)
    out = capsys.readouterr().out
    assert "torch's curve: torch.optim, live" in out and "FAIL" not in out
    for name in optimizer_steps.TASKS:
        assert any(line.startswith(name + " ") for line in out.splitlines()), out
    assert "onnxruntime-training" not in out  # (not installed here: no line about it)
    table = np.genfromtxt(tmp_path / "training" / "losses.csv", delimiter=",", names=True)
    assert len(table) == cli.TRAINING_STEPS
    first, last = table[0], table[-1]
    assert last["unet_onnxruntime"] < 0.5 * first["unet_onnxruntime"]
    plot = xml.dom.minidom.parse(str(tmp_path / "training" / "losses.svg"))  # two curves per model
    assert len(plot.getElementsByTagName("polyline")) == 2 * len(optimizer_steps.TASKS)


def test_training_demo_without_torch_uses_the_recorded_curve(tmp_path):
    code = ("import sys, pathlib; sys.modules['torch'] = None; from resample_grad import cli; "
            f"sys.exit(0 if cli._training_demo(pathlib.Path({str(tmp_path)!r}), 1) else 1)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "torch's curve: torch.optim, recorded with the model" in result.stdout


def test_training_demo_fails_when_a_curve_leaves_torchs(tmp_path, capsys, monkeypatch):
    real = optimizer_steps.torch_losses
    monkeypatch.setattr(optimizer_steps, "torch_losses",
                        lambda name, steps: [v * (1.01 if name == "registration3d" else 1) for v in real(name, steps)])
    assert not cli._training_demo(tmp_path, threads=1)
    line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("registration3d "))
    assert "FAIL" in line
