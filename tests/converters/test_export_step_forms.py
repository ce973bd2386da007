"""The faster standard-ONNX forms of a training step's ops (converters/torch_backward.py), against torch itself:
max pooling's indices from MaxPool's own Indices output (2-D and 3-D, padding, dilation, ceil_mode; an unbatched
input keeps torchlib's form), and ReLU's backward as a Mul by a 0/1 mask (exact zeros and NaN inputs as torch)."""
from __future__ import annotations

import numpy as np
import pytest

from resample_grad import converters, runtime

torch = pytest.importorskip("torch")
F = torch.nn.functional


def _run(fn, args):
    model = converters.export(fn, args, verify=False)
    session = runtime.session(model)
    feeds = {i.name: a.numpy() for i, a in zip(session.get_inputs(), args, strict=True)}
    return model, runtime.run(session, feeds)


POOLS = [  # (pool, input shape, kwargs)
    (F.max_pool2d, (2, 3, 8, 8), dict(kernel_size=2)),
    (F.max_pool2d, (2, 3, 7, 7), dict(kernel_size=2, stride=2, ceil_mode=True)),
    (F.max_pool2d, (2, 3, 9, 9), dict(kernel_size=3, stride=2, padding=1, dilation=2)),
    (F.max_pool2d, (3, 8, 8), dict(kernel_size=2)),  # unbatched: torchlib's form
    (F.max_pool3d, (2, 2, 6, 6, 6), dict(kernel_size=2)),
    (F.max_pool3d, (2, 2, 7, 5, 6), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
]


@pytest.mark.parametrize("pool, shape, kwargs", POOLS,
                         ids=[f"{len(shape) - 2}d-{shape}-{kwargs}" for _, shape, kwargs in POOLS])
def test_max_pool_indices_are_torchs(pool, shape, kwargs):
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(0))
    x[..., 0, :2] = 0.5  # ties within a window: the first maximum, as torch
    model, (output, indices) = _run(lambda t: pool(t, return_indices=True, **kwargs), [x])
    want, want_indices = pool(x, return_indices=True, **kwargs)
    np.testing.assert_array_equal(output, want.numpy())
    np.testing.assert_array_equal(indices, want_indices.numpy())
    batched = len(shape) == (4 if pool is F.max_pool2d else 5)
    assert sum(node.op_type == "MaxPool" for node in model.graph.node) == (1 if batched else 2)


def test_relu_backward_is_torchs_at_zero_and_nan():
    x = torch.tensor([[-1.0, 0.0, 2.0, float("nan"), -0.0, 3.0e-38]])
    g = torch.tensor([[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]])

    def backward(x, g):
        return torch.func.vjp(torch.relu, x)[1](g)[0]

    model, (ours,) = _run(backward, [x, g])
    assert not any(node.op_type == "Where" for node in model.graph.node)
    np.testing.assert_array_equal(ours, backward(x, g).numpy())  # [0, 0, 3, 4, 0, 6]
