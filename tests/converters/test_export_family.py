"""Every F.interpolate mode and rank, and grid_sample in 4-D and 5-D, through converters.export.

The rows are generated from the lists of modes, ranks, align_corners, size / scale_factor and
antialias, so a missing combination is a visible failing row. For each dtype one function holds
the torch.func.vjp of every row (one export, shared by the rows' tests); each row then checks its
own output on both paths (native kernels, onnxscript functions) against torch autograd:
1e-5 (float32), 1e-10 (float64), one rounding of the half types. torch's own OpInfo samples for
nn.functional.interpolate and nn.functional.grid_sample go through the same way.
"""
from __future__ import annotations

import functools
import itertools
import sys
import types
import unittest
import warnings

import numpy as np
import onnxruntime
import pytest

from cases import TOLERANCE
from resample_grad import converters, opset, runtime

torch = pytest.importorskip("torch")
F = torch.nn.functional
DTYPES = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16, "bfloat16": torch.bfloat16}

# --------------------------------------------------------------------------- the rows

MODES = {  # mode: (ranks, has align_corners, has antialias)
    "nearest": ((1, 2, 3), False, False),
    "nearest-exact": ((1, 2, 3), False, False),
    "linear": ((1,), True, False),
    "bilinear": ((2,), True, True),
    "bicubic": ((2,), True, True),
    "trilinear": ((3,), True, False),
}
IN_SIZES = (6, 5, 4)


def _row_kwargs(mode, rank, align_corners, sizing, antialias):
    """Scale factors exact in float32: the ops' scale attributes are float32, which carries a float64 torch scale
    exactly only then (README, "Scales"); 1.7 in float32 is the OpInfo samples' (test_torch_opinfo_samples)."""
    if antialias:  # antialias matters when downscaling
        kwargs = dict(size=(3, 2)) if sizing == "size" else dict(scale_factor=0.625)
    else:
        kwargs = dict(size=(11, 7, 9)[:rank]) if sizing == "size" else dict(scale_factor=1.75)
    if align_corners is not None:
        kwargs["align_corners"] = align_corners
    if antialias:
        kwargs["antialias"] = True
    return kwargs


INTERPOLATE_ROWS = {}
for mode, (ranks, corners, antialias) in MODES.items():
    for rank, ac, sizing, aa in itertools.product(ranks, (False, True) if corners else (None,),
                                                  ("size", "scale_factor"), (False, True) if antialias else (False,)):
        name = f"{mode}-{rank}d-{sizing}" + ("" if ac is None else f"-ac{int(ac)}") + ("-antialias" if aa else "")
        INTERPOLATE_ROWS[name] = (mode, rank, _row_kwargs(mode, rank, ac, sizing, aa))

GRID_ROWS = {f"{rank}d-{mode}-{padding}-ac{ac}": (rank, mode, padding, ac)
             for rank, mode, padding, ac in itertools.product((4, 5), ("bilinear", "nearest", "bicubic"),
                                                              ("zeros", "border", "reflection"), (0, 1))
             if not (rank == 5 and mode == "bicubic")}  # torch samples volumes bilinearly or nearest only


def _skip_reason(name, dtype):
    if dtype in ("float16", "bfloat16") and "antialias" in name:
        return "torch's CPU antialias kernels have no half types (compute_index_ranges_weights)"
    return None


# --------------------------------------------------------------------------- one export per dtype

def _inputs(shape, dtype, seed, low=None):
    gen = torch.Generator().manual_seed(seed)
    values = torch.rand(shape, generator=gen, dtype=torch.float64) * 2.4 - 1.2 if low else \
        torch.randn(shape, generator=gen, dtype=torch.float64)
    return values.to(DTYPES[dtype])


def _combined(calls, dtype):
    """calls: [(forward fn of the inputs, input tensors)]. One function of all inputs and output gradients
    returning every row's input gradients (torch.func.vjp), its torch results, and the export."""
    arguments, layout = [], []
    for forward, tensors in calls:
        out = forward(*tensors)
        grad = _inputs(out.shape, dtype, 1000 + len(arguments))
        layout.append((forward, len(tensors)))
        arguments += list(tensors) + [grad]

    def step(*flat):
        results, k = [], 0
        for forward, count in layout:
            primals, grad = flat[k:k + count], flat[k + count]
            results += list(torch.func.vjp(forward, *primals)[1](grad))
            k += count + 1
        return tuple(results)

    want = [t.detach().to(torch.float64).numpy() for t in step(*arguments)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = converters.export(step, tuple(arguments))
    feeds = {i.name: a.detach().to(torch.float32 if dtype == "bfloat16" else DTYPES[dtype]).numpy()
             for i, a in zip(model.graph.input, arguments, strict=False)}
    if dtype == "bfloat16":
        import ml_dtypes
        feeds = {k: v.astype(ml_dtypes.bfloat16) for k, v in feeds.items()}
    return model, feeds, want


@functools.cache
def interpolate_export(dtype):
    names = [n for n in INTERPOLATE_ROWS if not _skip_reason(n, dtype)]
    calls = []
    for k, name in enumerate(names):
        mode, rank, kwargs = INTERPOLATE_ROWS[name]
        x = _inputs((2, 3, *IN_SIZES[:rank]), dtype, k)
        calls.append((functools.partial(F.interpolate, mode=mode, **kwargs), (x,)))
    model, feeds, want = _combined(calls, dtype)
    return names, model, feeds, want


@functools.cache
def grid_export(dtype):
    names = list(GRID_ROWS)
    calls = []
    for k, name in enumerate(names):
        rank, mode, padding, ac = GRID_ROWS[name]
        spatial_in, spatial_out = (5, 6, 4)[:rank - 2], (4, 3, 5)[:rank - 2]
        x = _inputs((2, 3, *spatial_in), dtype, k)
        grid = _inputs((2, *spatial_out, rank - 2), dtype, 500 + k, low=True)
        calls.append((functools.partial(F.grid_sample, mode=mode, padding_mode=padding, align_corners=bool(ac)),
                      (x, grid)))
    model, feeds, want = _combined(calls, dtype)
    return names, model, feeds, want


@functools.cache
def _run(export, dtype, path):
    names, model, feeds, want = export(dtype)
    session = (runtime.session(model) if path == "kernel"
               else onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]))
    return runtime.run(session, feeds)


def _check(ours, want, dtype):
    ours = np.asarray(ours).astype(np.float64)
    assert ours.shape == want.shape
    scale = max(float(np.abs(want).max(initial=0.0)), 1.0)
    error = float(np.abs(ours - want).max(initial=0.0)) / scale
    assert error <= TOLERANCE[dtype], f"relative error {error:.3g} > {TOLERANCE[dtype]}"


def _grouped(rows, dtypes, group):
    """(row, dtype, path) parameters; the tests of one export run on one xdist worker (--dist loadgroup), which
    exports it once."""
    return [pytest.param(name, dtype, path, marks=pytest.mark.xdist_group(f"{group}-{dtype}"),
                         id=f"{name}-{dtype}-{path}")
            for name in rows for dtype in dtypes for path in ("kernel", "function")]


@pytest.mark.parametrize("name,dtype,path", _grouped(INTERPOLATE_ROWS, DTYPES, "interpolate"))
def test_interpolate_backward_exports_and_matches_torch(name, dtype, path):
    reason = _skip_reason(name, dtype)
    if reason:
        pytest.skip(reason)
    names, model, _, want = interpolate_export(dtype)
    index = names.index(name)
    unsupported = [n.op_type for n in model.graph.node if n.domain not in ("", "ai.onnx", opset.DOMAIN)]
    assert not unsupported
    _check(_run(interpolate_export, dtype, path)[index], want[index], dtype)


@pytest.mark.parametrize("name,dtype,path", _grouped(GRID_ROWS, ("float32", "float64"), "grid"))
def test_grid_sample_backward_exports_and_matches_torch(name, dtype, path):
    names, model, _, want = grid_export(dtype)
    index = names.index(name)
    ops = {n.op_type for n in model.graph.node if n.domain == opset.DOMAIN}
    assert ops == {"GridSampler2DGrad", "GridSampler3DGrad"}
    outputs = _run(grid_export, dtype, path)
    _check(outputs[2 * index], want[2 * index], dtype)  # the input's gradient
    _check(outputs[2 * index + 1], want[2 * index + 1], dtype)  # the grid's


@pytest.mark.xdist_group("interpolate-float32")
def test_every_interpolate_row_exports_its_family_op():
    """The ops a float32 export of all rows uses: every family op reachable from F.interpolate."""
    _, model, _, _ = interpolate_export("float32")
    ops = {n.op_type for n in model.graph.node if n.domain == opset.DOMAIN}
    assert ops == {"UpsampleNearest2dGrad", "UpsampleNearest3dGrad", "UpsampleNearestExact1dGrad",
                   "UpsampleNearestExact2dGrad", "UpsampleNearestExact3dGrad", "UpsampleBilinear2dGrad",
                   "ResizeBilinearV2Grad", "UpsampleTrilinear3dBackward", "UpsampleBicubic2dGrad",
                   "UpsampleBilinear2dAABackward", "UpsampleBicubic2dAAGrad"}


# --------------------------------------------------------------------------- torch's OpInfo samples

@functools.cache
def _op_db():
    try:
        import expecttest  # noqa: F401
    except ImportError:  # torch's testing package imports it for its TestCase only: a stub serves op_db
        stub = types.ModuleType("expecttest")
        stub.TestCase = unittest.TestCase
        sys.modules["expecttest"] = stub
    from torch.testing._internal.common_methods_invocations import op_db
    return {(op.name, op.variant_test_name): op for op in op_db
            if op.name in ("nn.functional.interpolate", "nn.functional.grid_sample")}


OPINFO_ENTRIES = [("nn.functional.interpolate", v) for v in
                  ("nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear", "area")] + \
                 [("nn.functional.grid_sample", "")]


@functools.cache
def opinfo_export(entry):
    op = _op_db()[entry]
    torch.manual_seed(0)
    samples = list(op.sample_inputs("cpu", torch.float32, requires_grad=True))
    calls = []
    for sample in samples:
        tensors = [sample.input.detach()] + [a.detach() for a in sample.args if isinstance(a, torch.Tensor)]
        others = [a for a in sample.args if not isinstance(a, torch.Tensor)]

        def forward(*ts, sample=sample, others=others):
            return op(ts[0], *ts[1:], *others, **sample.kwargs)
        calls.append((forward, tuple(tensors)))
    model, feeds, want = _combined(calls, "float32")
    return len(samples), model, feeds, want


@pytest.mark.parametrize("entry,path", [
    pytest.param(entry, path, marks=pytest.mark.xdist_group(f"opinfo-{entry[1]}"),
                 id=f"{entry[0]}[{entry[1]}]-{path}" if entry[1] else f"{entry[0]}-{path}")
    for entry in OPINFO_ENTRIES for path in ("kernel", "function")])
def test_torch_opinfo_samples(entry, path):
    count, model, feeds, want = opinfo_export(entry)
    assert count >= 18  # torch 2.13 ships 18 to 30 samples per entry
    session = (runtime.session(model) if path == "kernel"
               else onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]))
    for ours, expected in zip(runtime.run(session, feeds), want, strict=False):
        _check(ours, expected, "float32")
