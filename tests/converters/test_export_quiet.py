"""A plain export prints nothing: no warning of torch's exporter (the signature of a translation it could not infer,
torchvision missing), no FutureWarning of a deprecated torch class, run as a user runs it (a fresh Python with its
default warning filters, stderr not a terminal, so no progress lines)."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("torch")

SCRIPT = textwrap.dedent("""
    import torch
    from torch import nn
    from resample_grad import converters

    class Net(nn.Module):  # conv, batch norm, max pooling, bilinear upsampling, a cross-entropy loss (nll_loss_forward)
        def __init__(self):
            super().__init__()
            self.conv, self.norm, self.head = nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.Conv2d(4, 3, 1)

        def forward(self, x):
            y = nn.functional.max_pool2d(torch.relu(self.norm(self.conv(x))), 2)
            return self.head(nn.functional.interpolate(y, scale_factor=2, mode="bilinear"))

    torch.manual_seed(0)
    x, classes = torch.randn(2, 1, 8, 8), torch.randint(0, 3, (2, 8, 8))
    model = converters.export_training_step(Net().train(), nn.functional.cross_entropy, x, classes)
    converters.export(Net().eval(), [x])
    print(len(model.graph.node))
""")


def test_an_export_prints_no_warning():
    run = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    assert int(run.stdout.split()[-1]) > 0
    assert run.stderr == "", f"the export printed:\n{run.stderr}"
