"""Fuzzing with hypothesis over ops, shapes, attributes, dtypes and values, hostile ones included.

For every example: no crash; an invalid one is refused by every path with an error that names
the op; a valid one gives the same result on the kernel, the function and the reference.
RESAMPLE_GRAD_FUZZ_EXAMPLES sets the examples per op (default 40: a short CI run).
"""
from __future__ import annotations

import os

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import helper

from conftest import NUMPY_DTYPES, ONNX_DTYPES, one_node_model, run_model
from resample_grad import opset, runtime
from resample_grad.cli import disagreement
from resample_grad.opset import ResampleGradError

EXAMPLES = int(os.environ.get("RESAMPLE_GRAD_FUZZ_EXAMPLES", "40"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=os.environ.get("RESAMPLE_GRAD_FUZZ_RANDOM") is None,
                suppress_health_check=list(HealthCheck), database=None)
TOLERANCE = {"float32": 1e-4, "float64": 1e-9, "float16": 4e-3, "bfloat16": 3e-2}
HOSTILE = [np.nan, np.inf, -np.inf, 1e30, -1e30, 1e9, -7e6]
# grid values exact in float32 and double, so every path computes the same pixel
EXACT = [k / 16 for k in range(-40, 41)]


def dtypes():
    return st.sampled_from(["float32", "float64", "float16", "bfloat16"])


@st.composite
def grid_sampler_cases(draw):
    n, c = draw(st.integers(0, 2)), draw(st.integers(0, 3))
    hi, wi, ho, wo = (draw(st.integers(1, 6)) for _ in range(4))
    shapes = {"grad_output": [n, c, ho, wo], "input": [n, c, hi, wi], "grid": [n, ho, wo, 2]}
    attrs = dict(interpolation_mode=draw(st.sampled_from(["bilinear", "nearest", "bicubic"])),
                 padding_mode=draw(st.sampled_from(["zeros", "border", "reflection"])),
                 align_corners=draw(st.integers(0, 1)))
    if draw(st.integers(0, 9)) == 0:  # an invalid example: break one thing
        what = draw(st.sampled_from(["mode", "padding", "corners", "rank", "batch", "channels", "last_dim", "empty"]))
        if what == "mode":
            attrs["interpolation_mode"] = draw(st.sampled_from(["area", "linear", ""]))
        elif what == "padding":
            attrs["padding_mode"] = "wrap"
        elif what == "corners":
            attrs["align_corners"] = draw(st.sampled_from([-1, 2]))
        elif what == "rank":
            shapes["grid"] = shapes["grid"][:3]
        elif what == "batch":
            shapes["grid"][0] += 1
        elif what == "channels":
            shapes["grad_output"][1] += 1
        elif what == "last_dim":
            shapes["grid"][3] = 3
        else:
            shapes["input"][2] = 0
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    values = rng.choice(EXACT, size=shapes["grid"]).astype(np.float64)
    if values.size and draw(st.booleans()):
        hostile = draw(st.lists(st.sampled_from(HOSTILE), min_size=1, max_size=3))
        flat = values.reshape(-1)
        flat[rng.choice(flat.size, size=min(len(hostile), flat.size), replace=False)] = hostile[:min(len(hostile), flat.size)]
    arrays = {"grad_output": rng.standard_normal(shapes["grad_output"]), "input": rng.standard_normal(shapes["input"]),
              "grid": values}
    return "GridSampler2DGrad", shapes, ["grad_input", "grad_grid"], attrs, arrays


@st.composite
def nearest_cases(draw):
    two_d = draw(st.booleans())
    n, c = draw(st.integers(0, 2)), draw(st.integers(0, 3))
    spatial = 2 if two_d else 1
    ins = [draw(st.integers(1, 12)) for _ in range(spatial)]
    outs = [draw(st.integers(1, 12)) for _ in range(spatial)]
    scales = [float(np.float32(draw(st.sampled_from([0.0, 0.5, 1.5, 2.0, 2.5, 3.7, 0.13, 1e30])))) for _ in range(spatial)]
    input_size = [draw(st.sampled_from([n, -1])), draw(st.sampled_from([c, -1])), *ins]
    attrs = {"input_size": input_size}
    names = ["scales_h", "scales_w"] if two_d else ["scales"]
    attrs.update(zip(names, scales))
    if draw(st.booleans()):
        attrs["output_size"] = outs
    shape = [n, c, *outs]
    if draw(st.integers(0, 9)) == 0:
        what = draw(st.sampled_from(["negative", "nan", "size_length", "mismatch", "zero", "output_size"]))
        if what == "negative":
            attrs[names[0]] = -1.0
        elif what == "nan":
            attrs[names[-1]] = float("nan")
        elif what == "size_length":
            attrs["input_size"] = input_size + [3]
        elif what == "mismatch":
            attrs["input_size"] = [n + 1] + input_size[1:]
        elif what == "zero":
            attrs["input_size"] = input_size[:2] + [0] * spatial
        else:
            attrs["output_size"] = [o + 1 for o in outs]
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    op_type = "UpsampleNearestExact2dGrad" if two_d else "UpsampleNearestExact1dGrad"
    return op_type, {"grad_output": shape}, ["grad_input"], attrs, {"grad_output": rng.standard_normal(shape)}


@st.composite
def bilinear_cases(draw):
    n, c = draw(st.integers(0, 2)), draw(st.integers(0, 3))
    hi, wi, ho, wo = (draw(st.integers(1, 9)) for _ in range(4))
    corners, half = draw(st.sampled_from([(1, 0), (0, 1), (0, 0)]))
    scales = [float(np.float32(draw(st.sampled_from([0.0, 0.5, 1.5, 2.2, 0.37])))) for _ in range(2)]
    attrs = dict(align_corners=corners, half_pixel_centers=half, scales=scales)
    shapes = {"grads": [n, c, ho, wo], "original_image": [n, c, hi, wi]}
    if draw(st.integers(0, 9)) == 0:
        what = draw(st.sampled_from(["both", "scales", "negative", "batch", "rank"]))
        if what == "both":
            attrs.update(align_corners=1, half_pixel_centers=1)
        elif what == "scales":
            attrs["scales"] = scales[:1]
        elif what == "negative":
            attrs["scales"] = [-0.5, 1.0]
        elif what == "batch":
            shapes["grads"][0] += 1
        else:
            shapes["grads"] = shapes["grads"][:3]
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    arrays = {k: rng.standard_normal(v) for k, v in shapes.items()}
    return "ResizeBilinearV2Grad", shapes, ["y"], attrs, arrays


def _kernel_alone(op_type, shapes, outputs, attrs, dtype):
    """Symbolic dims, no function bodies: the kernel's own checks decide."""
    node = opset.make_node(op_type, list(shapes), outputs, **attrs)
    elem = ONNX_DTYPES[dtype]
    inputs = [helper.make_tensor_value_info(k, elem, [f"{k}_{i}" for i in range(len(v))]) for k, v in shapes.items()]
    graph = helper.make_graph([node], "fuzz", inputs, [helper.make_tensor_value_info(o, elem, None) for o in outputs if o])
    return helper.make_model(graph, ir_version=9, opset_imports=[helper.make_opsetid("", 18),
                                                                 helper.make_opsetid(opset.DOMAIN, opset.VERSION)])


def check(case, dtype):
    op_type, shapes, outputs, attrs, arrays = case
    feeds = {k: v.astype(NUMPY_DTYPES[dtype]) for k, v in arrays.items()}
    model = one_node_model(op_type, {k: tuple(v) for k, v in shapes.items()}, outputs, attrs, dtype)
    try:
        reference = run_model(model, feeds, "reference")
    except ResampleGradError as error:  # invalid: every path refuses, naming the op
        assert str(error).startswith(op_type)
        with pytest.raises(ResampleGradError) as refused:
            opset.attach(model)
        assert str(refused.value).startswith(op_type)
        with pytest.raises(Exception) as kernel_error:
            runtime.run(runtime.session(_kernel_alone(op_type, shapes, outputs, attrs, dtype)), feeds)
        assert op_type in str(kernel_error.value)
        return "invalid"
    for path in ("kernel", "function"):
        got = run_model(model, feeds, path)
        for ours, want in zip(got, reference):
            assert ours.shape == want.shape and ours.dtype == want.dtype
            assert np.isfinite(np.asarray(ours, np.float64)).all()
            assert disagreement(ours, want) <= TOLERANCE[dtype], (path, disagreement(ours, want))
    return "valid"


@FUZZ
@given(case=grid_sampler_cases(), dtype=dtypes())
def test_fuzz_kernel_function_reference_grid_sampler(case, dtype):
    check(case, dtype)


@FUZZ
@given(case=nearest_cases(), dtype=dtypes())
def test_fuzz_kernel_function_reference_nearest_exact(case, dtype):
    check(case, dtype)


@FUZZ
@given(case=bilinear_cases(), dtype=dtypes())
def test_fuzz_kernel_function_reference_bilinear(case, dtype):
    check(case, dtype)
