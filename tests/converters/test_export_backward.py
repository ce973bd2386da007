"""The standard-ONNX translations of converters/torch_backward.py and the tracing step of converters.export.

convolution_backward over rank, stride, padding, dilation, groups (depthwise with a channel multiplier),
transposed (with output_padding) and output_mask; the pooling and padding backward ops over their attributes;
grid_sampler_3d's forward; the torchlib translations that export replaces. Each table is one export per rank and
dtype (rows of one export share an xdist worker), checked against torch: 1e-5 (float32) and 1e-10 (float64),
relative to max(|torch|, 1) as in tests/cases.py.
"""
from __future__ import annotations

import functools
import itertools

import numpy as np
import onnxruntime
import pytest

from cases import TOLERANCE
from resample_grad import converters

torch = pytest.importorskip("torch")
F = torch.nn.functional
aten = torch.ops.aten
DTYPES = {"float32": torch.float32, "float64": torch.float64}


def export_rows(rows, dtype, seed):
    """rows: {name: (function of tensors -> tensors, input shapes)}. One export of all rows; returns
    ({name: (our outputs, torch's outputs)}, the model)."""
    gen = torch.Generator().manual_seed(seed)
    layout, args = [], []
    for name, (function, shapes) in rows.items():
        layout.append((name, function, len(args), len(shapes)))
        args += [torch.randn(shape, generator=gen, dtype=DTYPES[dtype]) for shape in shapes]

    def all_rows(*flat):
        return tuple(out for _, function, start, count in layout for out in function(*flat[start:start + count]))

    want = [t.detach().numpy() for t in all_rows(*args)]
    model = converters.export(all_rows, args)
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    got = session.run(None, {i.name: a.numpy() for i, a in zip(model.graph.input, args, strict=False)})
    results, k = {}, 0
    for name, function, start, count in layout:
        n = len(function(*args[start:start + count]))
        results[name] = (got[k:k + n], want[k:k + n])
        k += n
    return results, model


def check(ours, want, dtype):
    for k, (a, b) in enumerate(zip(ours, want, strict=False)):
        assert a.shape == b.shape, f"output {k}: shape {a.shape}, torch {b.shape}"
        error = float(np.abs(a.astype(np.float64) - b).max(initial=0.0)) / max(float(np.abs(b).max(initial=0.0)), 1.0)
        assert error <= TOLERANCE[dtype], f"output {k}: relative error {error:.3g} > {TOLERANCE[dtype]}"


def params(rows_by_rank, group):
    return [pytest.param(rank, name, dtype, marks=pytest.mark.xdist_group(f"{group}-{rank}-{dtype}"),
                         id=f"{rank}-{name}-{dtype}")
            for rank, rows in rows_by_rank.items() for name in rows for dtype in DTYPES]


# --------------------------------------------------------------------------- convolution_backward

MASKS = [m for m in itertools.product((True, False), repeat=3) if any(m)]
GROUPS = {"g1": 1, "g2": 2, "depthwise": 4}  # 4 input channels; depthwise with channel multiplier 2


def conv_row(rank, stride, padding, dilation, groups, transposed, mask):
    """aten.convolution_backward itself (no forward), as the backward of F.conv{1,2,3}d / conv_transpose."""
    g = GROUPS[groups]
    cin, cout = 4, 8 if groups == "depthwise" else 6
    spatial, kernel = [11, 9, 8][:rank] if rank < 3 else [6, 5, 7], [3] * rank
    out_pad = [1 if transposed and stride == 2 else 0] * rank
    weight = (cin, cout // g, *kernel) if transposed else (cout, cin // g, *kernel)
    forward = ((F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d) if transposed
               else (F.conv1d, F.conv2d, F.conv3d))[rank - 1]
    extra = {"output_padding": out_pad} if transposed else {}
    out = forward(torch.zeros(2, cin, *spatial), torch.zeros(weight), stride=stride, padding=padding, dilation=dilation,
                  groups=g, **extra).shape

    def backward(grad_output, x, w):
        grads = aten.convolution_backward(grad_output, x, w, [cout], [stride] * rank, [padding] * rank,
                                          [dilation] * rank, transposed, out_pad, g, list(mask))
        return [t for t, wanted in zip(grads, mask, strict=False) if wanted]
    return backward, [out, (2, cin, *spatial), weight]


def _conv_name(stride, padding, dilation, groups, transposed, mask):
    return (f"s{stride}-p{padding}-d{dilation}-{groups}-{'transposed' if transposed else 'conv'}-mask"
            + "".join("xwb"[k] if m else "_" for k, m in enumerate(mask)))


# every attribute combination with all three gradients, and every output_mask on two of them
CONV_ROWS = {}
for _rank in (1, 2, 3):
    rows = {}
    for s, p, d, grp, tr in itertools.product((1, 2), (0, 1), (1, 2), GROUPS, (False, True)):
        rows[_conv_name(s, p, d, grp, tr, (True,) * 3)] = (s, p, d, grp, tr, (True,) * 3)
    for tr, mask in itertools.product((False, True), MASKS[1:]):
        rows[_conv_name(2, 1, 2, "g2", tr, mask)] = (2, 1, 2, "g2", tr, mask)
    CONV_ROWS[f"conv{_rank}d"] = {name: (_rank, *row) for name, row in rows.items()}


@functools.cache
def conv_export(rank, dtype):
    return export_rows({name: conv_row(*row) for name, row in CONV_ROWS[rank].items()}, dtype, seed=int(rank[4]))


@pytest.mark.parametrize("rank,name,dtype", params(CONV_ROWS, "conv"))
def test_convolution_backward_matches_torch(rank, name, dtype):
    ours, want = conv_export(rank, dtype)[0][name]
    check(ours, want, dtype)


@pytest.mark.parametrize("dtype,mask,absent", [
    ("float32", (False, True, False), {"ConvTranspose", "ReduceSum"}),  # weight only: one Conv
    ("float32", (True, False, False), {"Conv", "ReduceSum"}),           # input only: one ConvTranspose
    ("float64", (False, False, True), {"MatMul", "Gather", "ScatterElements", "Conv"}),  # bias only: one ReduceSum
    ("float64", (True, False, False), {"ReduceSum", "Conv", "ConvTranspose"}),  # im2col's col2im, no weight sum
])
def test_output_mask_leaves_unneeded_gradients_out(dtype, mask, absent):
    results, model = export_rows({"one": conv_row(2, 2, 1, 1, "g2", False, mask)}, dtype, seed=5)
    check(*results["one"], dtype)
    assert not absent & {n.op_type for n in model.graph.node}, sorted({n.op_type for n in model.graph.node})


# --------------------------------------------------------------------------- pooling and padding

def _pool_rows(rank):
    """F.avg_pool / max_pool / adaptive_avg_pool / replicate padding of rank 1, 2, 3, differentiated with
    torch.func.vjp: the backward ops avg_pool{2,3}d_backward (1-D pools run as 2-D), max_pool{2,3}d_with_indices_
    backward, _adaptive_avg_pool{2,3}d_backward, replication_pad{1,2,3}d_backward. The average pools' forward
    outputs are returned too (export replaces torchlib's avg_pool, which ignores divisor_override)."""
    avg = (F.avg_pool1d, F.avg_pool2d, F.avg_pool3d)[rank - 1]
    maxp = (F.max_pool1d, F.max_pool2d, F.max_pool3d)[rank - 1]
    adaptive = (F.adaptive_avg_pool1d, F.adaptive_avg_pool2d, F.adaptive_avg_pool3d)[rank - 1]
    shape = (2, 3, *[(11,), (9, 7), (7, 6, 5)][rank - 1])
    windows = [(2, 1, 0, 1), (3, 2, 1, 2), (3, 1, 1, 1), (2, 2, 1, 2)]  # kernel, stride, padding, dilation (max)

    def vjp(forward, with_forward):
        def rows(x, grad):
            out, pull = torch.func.vjp(forward, x)
            return ([out] if with_forward else []) + [pull(grad[tuple(slice(0, n) for n in out.shape)])[0]]
        return rows

    grad_shape = (2, 3, *[s + 2 for s in shape[2:]])  # cut to each output's shape
    rows = {}
    for (k, s, p, _d), ceil, include_pad, divisor in itertools.product(windows, (False, True), (True, False),
                                                                      (None, 3) if rank > 1 else (None,)):
        extra = {"divisor_override": divisor} if divisor else {}
        forward = functools.partial(avg, kernel_size=k, stride=s, padding=p, ceil_mode=ceil,
                                    count_include_pad=include_pad, **extra)
        rows[f"avg-k{k}-s{s}-p{p}-ceil{int(ceil)}-pad{int(include_pad)}-div{divisor}"] = (
            vjp(forward, True), [shape, grad_shape])
    for (k, s, p, d), ceil in itertools.product(windows, (False, True)):
        forward = functools.partial(maxp, kernel_size=k, stride=s, padding=p, dilation=d, ceil_mode=ceil)
        rows[f"max-k{k}-s{s}-p{p}-d{d}-ceil{int(ceil)}"] = (vjp(forward, False), [shape, grad_shape])
    for size in (1, 3, 4):
        rows[f"adaptive-{size}"] = (vjp(functools.partial(adaptive, output_size=size), rank == 3), [shape, grad_shape])
    pads = (1, 2, 0, 1, 2, 0)[:2 * rank]
    grad_pad = (2, 3, *[n + pads[2 * (rank - 1 - d)] + pads[2 * (rank - 1 - d) + 1] for d, n in enumerate(shape[2:])])
    rows["replicate-pad"] = (vjp(functools.partial(F.pad, pad=pads, mode="replicate"), False), [shape, grad_pad])
    return rows


POOL_ROWS = {f"pool{rank}d": _pool_rows(rank) for rank in (1, 2, 3)}


@functools.cache
def pool_export(rank, dtype):
    return export_rows(POOL_ROWS[rank], dtype, seed=10 + int(rank[4]))


@pytest.mark.parametrize("rank,name,dtype", params(POOL_ROWS, "pool"))
def test_pooling_backward_matches_torch(rank, name, dtype):
    ours, want = pool_export(rank, dtype)[0][name]
    check(ours, want, dtype)


# --------------------------------------------------------------------------- grid_sampler_3d's forward

GRID3D_ROWS = {f"{mode}-{padding}-ac{int(corners)}": (mode, padding, corners)
               for mode, padding, corners in itertools.product(("bilinear", "nearest"),
                                                               ("zeros", "border", "reflection"), (False, True))}


@functools.cache
def grid3d_export(dtype):
    def row(mode, padding, corners):
        def sample(x, grid):
            return [F.grid_sample(x, grid, mode=mode, padding_mode=padding, align_corners=corners)]
        return sample, [(2, 3, 5, 6, 4), (2, 4, 3, 5, 3)]
    return export_rows({name: row(*row_args) for name, row_args in GRID3D_ROWS.items()}, dtype, seed=20)


@pytest.mark.parametrize("name,dtype", [pytest.param(n, d, marks=pytest.mark.xdist_group(f"grid3d-{d}"), id=f"{n}-{d}")
                                        for n in GRID3D_ROWS for d in DTYPES])
def test_grid_sampler_3d_forward_matches_torch(name, dtype):
    results, model = grid3d_export(dtype)
    assert "GridSample" not in {n.op_type for n in model.graph.node}  # opset 18's GridSample is 4-D only
    check(*results[name], dtype)


# --------------------------------------------------------------------------- the tracing step

def _view_updates(x, w):
    """In-place updates of views inside the differentiated function (autograd's CopySlices backward), as kornia,
    monai and hand-written code do them."""
    def forward(w):
        t = (x * w).clone()
        t[:, :, 2] = t[:, :, 2] * 0.5           # slice assignment
        t[..., 0] += 1.0                        # in-place add on a view
        t.view(-1)[::3].mul_(2.0)               # through a flat view
        t.transpose(1, 2)[0] = t[1].t() * 0.25  # through a transpose
        t[0].diagonal().mul_(3.0)               # through a diagonal
        return (t * t).sum()
    return torch.func.grad(forward)(w)


@pytest.mark.parametrize("dtype", DTYPES)
def test_views_updated_in_place_export(dtype):
    rows = {"views": (lambda x, w: [_view_updates(x, w)], [(2, 4, 4), (2, 4, 4)])}
    results, model = export_rows(rows, dtype, seed=30)
    assert not {n.domain for n in model.graph.node} - {"", "ai.onnx"}
    check(*results["views"], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_copy_broadcasts(dtype):
    """torchlib's aten.copy drops the broadcast of src to self's shape."""
    results, _ = export_rows({"copy": (lambda x, v: [aten.copy(x, v) * 2.0], [(2, 3, 4), (4,)])}, dtype, seed=31)
    check(*results["copy"], dtype)


def test_translations_name_their_aten_overloads():
    from resample_grad.converters import torch_backward

    table = converters.torch_translation_table()
    for name, translation in torch_backward.TRANSLATIONS.items():
        packet, _, overload = name.partition(".")  # ("op.overload": that overload only)
        assert table[getattr(getattr(aten, packet), overload or "default")] is translation
        assert f"\n{name}(" in "\n" + translation.__doc__.replace("\n    ", "\n"), name
