"""Fuzzing with hypothesis over ops, shapes, attributes, dtypes and values, hostile ones included.

For every example: no crash; an invalid one is refused by every path with an error that names
the op; a valid one gives the same result on the kernel, the function and the reference.
RESAMPLE_GRAD_FUZZ_EXAMPLES sets the examples per op (default 40: a short CI run).
"""
from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import helper, numpy_helper

from conftest import NUMPY_DTYPES, ONNX_DTYPES, one_node_model, run_model
from resample_grad import opset, runtime
from resample_grad.opset import _MODULES, ResampleGradError
from resample_grad.opset._resize_v2 import ResizeV2Spec
from resample_grad.opset._upsample import UpsampleSpec
from resample_grad.paths import disagreement

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
        flat[rng.choice(flat.size, size=min(len(hostile), flat.size), replace=False)] = hostile[:min(len(hostile),
                                                                                                     flat.size)]
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
    scales = [float(np.float32(draw(st.sampled_from([0.0, 0.5, 1.5, 2.0, 2.5, 3.7, 0.13, 1e30]))))
              for _ in range(spatial)]
    input_size = [draw(st.sampled_from([n, -1])), draw(st.sampled_from([c, -1])), *ins]
    attrs = {"input_size": input_size}
    names = ["scales_h", "scales_w"] if two_d else ["scales"]
    attrs.update(zip(names, scales, strict=True))
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


UPSAMPLE_SPECS = [m.SPEC for m in _MODULES if isinstance(getattr(m, "SPEC", None), UpsampleSpec)]
RESIZE_V2_SPECS = [m.SPEC for m in _MODULES if isinstance(getattr(m, "SPEC", None), ResizeV2Spec)]


@st.composite
def upsample_cases(draw):
    """The torch-style family: an op of _upsample.py's table, one of its spatial ranks, sizes, scales (given or 0),
    align_corners, input_size with -1 for N / C, output_size given or not."""
    spec = draw(st.sampled_from(UPSAMPLE_SPECS))
    spatial = draw(st.sampled_from(spec.spatial_ranks))
    n, c = draw(st.integers(0, 2)), draw(st.integers(0, 3))
    ins = [draw(st.integers(1, 9)) for _ in range(spatial)]
    outs = [draw(st.integers(1, 9)) for _ in range(spatial)]
    values = [float(np.float32(draw(st.sampled_from([0.0, 0.5, 1.5, 2.0, 2.5, 3.7, 0.13, 1e30]))))
              for _ in range(spatial)]
    attrs = {"input_size": [draw(st.sampled_from([n, -1])), draw(st.sampled_from([c, -1])), *ins]}
    if spec.align_corners:
        attrs["align_corners"] = draw(st.integers(0, 1))
    if spec.output_size_required or draw(st.booleans()):
        attrs["output_size"] = outs
    scale_names = list(spec.scales)  # every scale attribute the op has (a 1-D form reads only the last)
    if spec.scales_list:
        if not (spec.output_size_or_scales and "output_size" in attrs) and draw(st.booleans()):
            attrs[spec.scales_list] = values
    else:
        attrs.update(zip(scale_names[len(scale_names) - spatial:], values, strict=True))
    shape = [n, c, *outs]
    if draw(st.integers(0, 9)) == 0:  # an invalid example: break one thing
        faults = ["negative", "nan", "input_size_length", "batch", "zero", "output_size", "output_size_length",
                  "no_input_size", "rank", "empty"]
        faults += ["no_output_size"] if spec.output_size_required else []
        faults += ["both", "scales_length"] if spec.output_size_or_scales else []
        faults += ["corners"] if spec.align_corners else []
        what = draw(st.sampled_from(faults))
        name = draw(st.sampled_from(scale_names or [spec.scales_list]))
        if what in ("negative", "nan"):
            bad = -1.0 if what == "negative" else float("nan")
            if spec.scales_list:
                attrs[name] = [bad if k == spatial - 1 else v for k, v in enumerate(values)]
                attrs.pop("output_size", None) if spec.output_size_or_scales else None
            else:
                attrs[name] = bad
        elif what == "input_size_length":
            attrs["input_size"] = attrs["input_size"] + [3]
        elif what == "batch":
            attrs["input_size"] = [n + 1] + attrs["input_size"][1:]
        elif what == "zero":
            attrs["input_size"] = attrs["input_size"][:2] + [0] + ins[1:]
        elif what == "output_size":
            attrs["output_size"] = [o + 1 for o in outs]
        elif what == "output_size_length":
            attrs["output_size"] = outs + [2]
        elif what == "no_input_size":
            del attrs["input_size"]
        elif what == "rank":
            shape = [n, c, *outs, 2] if 2 + spatial + 1 not in [2 + r for r in spec.spatial_ranks] else [n, c]
        elif what == "empty":
            shape[-1] = 0
        elif what == "no_output_size":
            del attrs["output_size"]
        elif what == "both":
            attrs.update(output_size=outs, **{spec.scales_list: [2.0] * spatial})
        elif what == "scales_length":
            attrs[spec.scales_list] = values + [2.0]
            attrs.pop("output_size", None)
        else:
            attrs["align_corners"] = draw(st.sampled_from([-1, 2]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return spec.op_type, {"grad_output": shape}, [spec.output], attrs, {"grad_output": rng.standard_normal(shape)}


@st.composite
def resize_v2_cases(draw):
    """The Resize*V2 family (ResizeBilinearV2Grad, ResizeBicubicV2Grad, ResizeNearestNeighborV2Grad with its int
    `size`, ResizeLinearGrad on [N, C, L]): sizes, flags, scales, dtypes of `size`."""
    spec = draw(st.sampled_from(RESIZE_V2_SPECS))
    n, c = draw(st.integers(0, 2)), draw(st.integers(0, 3))
    ins = [draw(st.integers(1, 9)) for _ in range(spec.spatial)]
    outs = [draw(st.integers(1, 9)) for _ in range(spec.spatial)]
    flags = [(1, 0), (0, 1), (0, 0)] if spec.half_pixel_centers else [(1, 0), (0, 0)]
    corners, half = draw(st.sampled_from(flags))
    attrs = {"align_corners": corners}
    if spec.half_pixel_centers:
        attrs["half_pixel_centers"] = half
    values = [float(np.float32(draw(st.sampled_from([0.0, 0.5, 1.5, 2.2, 0.37, 2.5])))) for _ in range(spec.spatial)]
    if spec.scale_attr == "scale":
        attrs["scale"] = values[0]
    elif draw(st.booleans()):
        attrs["scales"] = values
    shapes = {"grads": [n, c, *outs]}
    arrays = {}
    if spec.shape_input == "size":
        size = np.array(ins, draw(st.sampled_from([np.int32, np.int64])))
    else:
        shapes["original_image"] = [n, c, *ins]
    if draw(st.integers(0, 9)) == 0:
        faults = ["negative", "nan", "corners", "rank", "empty_grads"]
        faults += ["both", "half_value"] if spec.half_pixel_centers else []
        faults += ["scales_length"] if spec.scale_attr == "scales" else []
        faults += ["size_length", "size_zero"] if spec.shape_input == "size" else ["batch", "channels", "empty_image",
                                                                                    "image_rank"]
        what = draw(st.sampled_from(faults))
        if what in ("negative", "nan"):
            bad = -0.5 if what == "negative" else float("nan")
            if spec.scale_attr == "scale":
                attrs["scale"] = bad
            else:
                attrs["scales"] = values[:-1] + [bad]
        elif what == "corners":
            attrs["align_corners"] = 2
        elif what == "rank":
            shapes["grads"] = shapes["grads"][:-1]
        elif what == "empty_grads":
            shapes["grads"][2] = 0
        elif what == "both":
            attrs.update(align_corners=1, half_pixel_centers=1)
        elif what == "half_value":
            attrs["half_pixel_centers"] = -1
        elif what == "scales_length":
            attrs["scales"] = values + [1.5]
        elif what == "size_length":
            size = np.append(size, size[:1])
        elif what == "size_zero":
            size[draw(st.integers(0, 1))] = draw(st.sampled_from([0, -2]))
        elif what == "batch":
            shapes["original_image"][0] += 1
        elif what == "channels":
            shapes["original_image"][1] += 1
        elif what == "empty_image":
            shapes["original_image"][-1] = 0
        else:
            shapes["original_image"] = shapes["original_image"] + [1]
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    arrays = {k: rng.standard_normal(v) for k, v in shapes.items()}
    if spec.shape_input == "size":
        shapes["size"] = list(size.shape)
        arrays["size"] = size
    return spec.op_type, shapes, ["y"], attrs, arrays


@st.composite
def grid_sampler_3d_cases(draw):
    n, c = draw(st.integers(0, 2)), draw(st.integers(0, 3))
    di, hi, wi, do, ho, wo = (draw(st.integers(1, 4)) for _ in range(6))
    shapes = {"grad": [n, c, do, ho, wo], "x": [n, c, di, hi, wi], "grid": [n, do, ho, wo, 3]}
    attrs = dict(interpolation_mode=draw(st.sampled_from(["bilinear", "nearest"])),
                 padding_mode=draw(st.sampled_from(["zeros", "border", "reflection"])),
                 align_corners=draw(st.integers(0, 1)))
    if draw(st.integers(0, 9)) == 0:
        what = draw(st.sampled_from(["mode", "padding", "corners", "rank", "batch", "channels", "depth", "last_dim",
                                     "empty"]))
        if what == "mode":
            attrs["interpolation_mode"] = draw(st.sampled_from(["bicubic", "trilinear", ""]))
        elif what == "padding":
            attrs["padding_mode"] = "wrap"
        elif what == "corners":
            attrs["align_corners"] = draw(st.sampled_from([-1, 2]))
        elif what == "rank":
            shapes[draw(st.sampled_from(["grad", "x", "grid"]))].pop(2)
        elif what == "batch":
            shapes["grid"][0] += 1
        elif what == "channels":
            shapes["grad"][1] += 1
        elif what == "depth":
            shapes["grid"][1] += 1
        elif what == "last_dim":
            shapes["grid"][4] = 2
        else:
            shapes["x"][draw(st.integers(2, 4))] = 0
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    values = rng.choice(EXACT, size=shapes["grid"]).astype(np.float64)
    if values.size and draw(st.booleans()):
        hostile = draw(st.lists(st.sampled_from(HOSTILE), min_size=1, max_size=3))
        flat = values.reshape(-1)
        count = min(len(hostile), flat.size)
        flat[rng.choice(flat.size, size=count, replace=False)] = hostile[:count]
    arrays = {"grad": rng.standard_normal(shapes["grad"]), "x": rng.standard_normal(shapes["x"]), "grid": values}
    return "GridSampler3DGrad", shapes, ["dx", "dgrid"], attrs, arrays


def _is_int(array) -> bool:
    return np.asarray(array).dtype.kind in "iu"


def _kernel_alone(op_type, shapes, outputs, attrs, dtype, int_inputs=None):
    """Symbolic dims, no function bodies: the kernel's own checks decide. int_inputs: name -> numpy int dtype."""
    int_inputs = int_inputs or {}
    node = opset.make_node(op_type, list(shapes), outputs, **attrs)
    elem = ONNX_DTYPES[dtype]
    inputs = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(np.dtype(int_inputs[k]))
                                            if k in int_inputs else elem, [f"{k}_{i}" for i in range(len(v))])
              for k, v in shapes.items()]
    graph = helper.make_graph([node], "fuzz", inputs,
                              [helper.make_tensor_value_info(o, elem, None) for o in outputs if o])
    return helper.make_model(graph, ir_version=9, opset_imports=[helper.make_opsetid("", 18),
                                                                 helper.make_opsetid(opset.DOMAIN, opset.VERSION)])


def _constants(model, values: dict):
    """The inputs in `values` become initializers: attach() checks their values statically."""
    for name, value in values.items():
        kept = [i for i in model.graph.input if i.name != name]
        del model.graph.input[:]
        model.graph.input.extend(kept)
        model.graph.initializer.append(numpy_helper.from_array(value, name))
    return model


def check(case, dtype):
    """Int inputs (a `size`) are constants of the model that the reference, attach() and the function see, and fed
    inputs of the kernel alone."""
    op_type, shapes, outputs, attrs, arrays = case
    with np.errstate(over="ignore"):  # a hostile 1e30 grid value is inf in float16, as intended
        feeds = {k: v if _is_int(v) else v.astype(NUMPY_DTYPES[dtype]) for k, v in arrays.items()}
    ints = {k: v for k, v in feeds.items() if _is_int(v)}
    model = one_node_model(op_type, {k: tuple(v) for k, v in shapes.items()}, outputs, attrs, dtype,
                           input_dtypes={k: v.dtype for k, v in ints.items()})
    model = _constants(model, ints)
    floats = {k: v for k, v in feeds.items() if k not in ints}
    try:
        reference = run_model(model, floats, "reference")
    except ResampleGradError as error:  # invalid: every path refuses, naming the op
        assert str(error).startswith(op_type)
        with pytest.raises(ResampleGradError) as refused:
            opset.attach(model)
        assert str(refused.value).startswith(op_type)
        with pytest.raises(Exception) as kernel_error:
            kernel = _kernel_alone(op_type, shapes, outputs, attrs, dtype, {k: v.dtype for k, v in ints.items()})
            runtime.run(runtime.session(kernel), feeds)
        assert op_type in str(kernel_error.value)
        return "invalid"
    for path in ("kernel", "function"):
        got = run_model(model, floats, path)
        for ours, want in zip(got, reference, strict=True):
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


@FUZZ
@given(case=upsample_cases(), dtype=dtypes())
def test_fuzz_kernel_function_reference_upsample_family(case, dtype):
    check(case, dtype)


@FUZZ
@given(case=resize_v2_cases(), dtype=dtypes())
def test_fuzz_kernel_function_reference_resize_v2_family(case, dtype):
    check(case, dtype)


@FUZZ
@given(case=grid_sampler_3d_cases(), dtype=dtypes())
def test_fuzz_kernel_function_reference_grid_sampler_3d(case, dtype):
    check(case, dtype)
