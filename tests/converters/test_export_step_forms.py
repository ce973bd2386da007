"""The faster standard-ONNX forms of a training step's ops (converters/torch_backward.py), against torch itself:
max pooling's indices from MaxPool's own Indices output (2-D and 3-D, padding, dilation, ceil_mode; an unbatched
input keeps torchlib's form), ReLU's backward as a Mul by a 0/1 mask (exact zeros and NaN inputs as torch); and the
forms every portable runtime reads (tests/portable/test_runtime_bugs.py): a grouped convolution's input gradient and
a grouped transposed convolution as a ConvTranspose per group, in-place updates of views and slices without
ScatterND."""
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


def _grouped_conv_input_gradient(x, w, g, stride):
    return torch.func.vjp(lambda t: F.conv2d(t, w, stride=stride, padding=1, groups=3), x)[1](g)[0]


@pytest.mark.parametrize("stride", [1, 2])
def test_grouped_conv_input_gradient_is_one_conv_transpose_per_group(stride):
    """The input gradient of a grouped convolution (kornia's depthwise blur: 3 groups) as a ConvTranspose of group 1
    per group, which IREE compiles (tests/portable/test_runtime_bugs.py), against torch autograd; stride 2 needs
    output_padding (an input of 10 gives the output of an input of 9)."""
    gen = torch.Generator().manual_seed(1)
    x, w = torch.randn(2, 3, 10, 9, generator=gen), torch.randn(6, 1, 3, 3, generator=gen)
    g = torch.randn(F.conv2d(x, w, stride=stride, padding=1, groups=3).shape, generator=gen)
    model, (ours,) = _run(lambda x, w, g: _grouped_conv_input_gradient(x, w, g, stride), [x, w, g])
    transposed = [n for n in model.graph.node if n.op_type == "ConvTranspose"]
    assert len(transposed) == 3
    assert all(a.i == 1 for n in transposed for a in n.attribute if a.name == "group")
    want = _grouped_conv_input_gradient(x.double(), w.double(), g.double(), stride)
    np.testing.assert_allclose(ours, want.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("bias", [True, False])
def test_grouped_transposed_convolution_is_one_conv_transpose_per_group(bias):
    """A grouped transposed convolution's forward (torchlib: a grouped ConvTranspose, which IREE does not compile) as
    a ConvTranspose of group 1 per group and the bias, against torch; stride, padding, dilation, output_padding."""
    gen = torch.Generator().manual_seed(3)
    args = [torch.randn(2, 4, 5, 6, generator=gen), torch.randn(4, 3, 3, 2, generator=gen)]
    args += [torch.randn(6, generator=gen)] if bias else []

    def forward(x, w, *b):
        return F.conv_transpose2d(x, w, *b, stride=2, padding=1, output_padding=1, groups=2, dilation=2)

    model, (ours,) = _run(forward, args)
    transposed = [n for n in model.graph.node if n.op_type == "ConvTranspose"]
    assert len(transposed) == 2
    assert all(a.i == 1 for n in transposed for a in n.attribute if a.name == "group")
    np.testing.assert_allclose(ours, forward(*(a.double() for a in args)).numpy(), rtol=1e-5, atol=1e-5)


def _view_updates(m):
    """kornia's warp_affine: a homography from an affine matrix by padding a row and adding 1 in place to its corner
    (H[..., -1, -1] += 1), then read through views: a slice (slice_backward) and a block (as_strided)."""
    h = F.pad(m, [0, 0, 0, 1])
    h[..., -1, -1] += 1.0
    return (h[:, 1:] ** 2).sum() + (h[..., :2, :2] * h[..., :2, :2].transpose(-1, -2)).sum() + (h ** 3).sum()


def test_in_place_update_of_a_view_exports_without_scatter_nd():
    """_view_updates's gradient: the in-place update's backward (as_strided_scatter: a Where of a constant mask), the
    slice's (slice_backward: a Concat) and the block view's (as_strided: a Gather at constant 1-D indices) written
    without ScatterND (tinygrad computes it in its data input) and without Gather indices of rank 2 or more (which
    tinygrad refuses when they are constants); against torch autograd."""
    m = torch.randn(2, 2, 3, generator=torch.Generator().manual_seed(2))
    model, (ours,) = _run(torch.func.grad(_view_updates), [m])
    constants = {t.name: t for t in model.graph.initializer}
    assert not any(n.op_type == "ScatterND" for n in model.graph.node)
    assert not any(n.op_type == "Gather" and n.input[1] in constants and len(constants[n.input[1]].dims) > 1
                   for n in model.graph.node)
    np.testing.assert_allclose(ours, torch.func.grad(_view_updates)(m.double()).numpy(), rtol=1e-5, atol=1e-5)


VIEWS = [([2], [9], 8), ([2, 2, 2], [9, 3, 1], 0), ([], [], 3), ([3, 0], [1, 1], 0), ([3, 2], [1, 3], 1), ([4], [0], 2)]


@pytest.mark.parametrize("size, stride, offset", VIEWS)
def test_strided_index_is_what_torch_as_strided_reads(size, stride, offset):
    """The flat indices the export's as_strided and as_strided_scatter forms read (kornia's views first), against
    torch's as_strided of an arange; a view past the tensor's end has none (the export leaves it to torch)."""
    from resample_grad.converters.torch_export import _strided_index

    want = torch.arange(18).as_strided(size, stride, offset).reshape(-1).numpy()
    np.testing.assert_array_equal(_strided_index(18, size, stride, offset), want)
    if want.size:  # a tensor one element shorter than the view reaches
        assert _strided_index(int(want.max()), size, stride, offset) is None
