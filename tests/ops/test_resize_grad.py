"""ResizeGrad beyond the ONNX cases: random configurations, float64, any rank and axes.

- hypothesis draws a Resize configuration (rank, axes, sizes or scales, every attribute, dtype): the
  kernel and the function agree with the NumPy reference, and where onnxruntime's Resize runs that
  configuration, the reference satisfies the adjoint identity with it (float32, 1e-5);
- float64 (onnxruntime has no double Resize): the forward in double is built from onnxruntime's own
  per-axis weights (its float Resize of an identity matrix, one axis at a time, applied in double),
  and <forward(v), w> == <v, ResizeGrad(w)> to 1e-12.
"""
from __future__ import annotations

import os

import numpy as np
import onnxruntime
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper

from conftest import NUMPY_DTYPES, one_node_model, run_model
from resample_grad import opset
from resample_grad.opset import ResampleGradError, _onnx_resize, resize_grad
from resample_grad.paths import disagreement

EXAMPLES = int(os.environ.get("RESAMPLE_GRAD_FUZZ_EXAMPLES", "40"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=os.environ.get("RESAMPLE_GRAD_FUZZ_RANDOM") is None,
                suppress_health_check=list(HealthCheck), database=None)
TOLERANCE = {"float32": 1e-4, "float64": 1e-9, "float16": 4e-3, "bfloat16": 3e-2}


def resize_session(x_shape, attrs, roi, scales, sizes, opset_version=19):
    """onnxruntime's Resize for these inputs as initializers (float32)."""
    inits, names = [], ["x"]
    for name, value, elem in (("roi", roi, TensorProto.FLOAT), ("scales", scales, TensorProto.FLOAT),
                              ("sizes", sizes, TensorProto.INT64)):
        if value is None:
            names.append("")
            continue
        inits.append(helper.make_tensor(name, elem, [len(value)], list(value)))
        names.append(name)
    node = helper.make_node("Resize", names, ["y"], **attrs)
    graph = helper.make_graph([node], "resize", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializer=inits)
    model = helper.make_model(graph, ir_version=9, opset_imports=[helper.make_opsetid("", opset_version)])
    return onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def grad_model(x_shape, dy_shape, attrs, roi, scales, sizes, dtype):
    inputs = {"dY": dy_shape, "X": x_shape, "roi": (len(roi or []),), "scales": (len(scales or []),),
              "sizes": (len(sizes or []),)}
    return one_node_model("ResizeGrad", inputs, ["dX"], attrs, dtype,
                          input_dtypes={"roi": np.float32, "scales": np.float32, "sizes": np.int64})


def grad_feeds(dy, x, roi, scales, sizes):
    return {"dY": dy, "X": x, "roi": np.array(roi or [], np.float32), "scales": np.array(scales or [], np.float32),
            "sizes": np.array(sizes or [], np.int64)}


# --------------------------------------------------------------------------- random configurations

@st.composite
def configurations(draw):
    rank = draw(st.integers(1, 4))
    x_shape = [draw(st.integers(1, 6)) for _ in range(rank)]
    mode = draw(st.sampled_from(["nearest", "linear", "cubic"]))
    attrs = dict(mode=mode, coordinate_transformation_mode=draw(st.sampled_from(_onnx_resize.COORDINATE_MODES)))
    if mode == "nearest":
        attrs["nearest_mode"] = draw(st.sampled_from(_onnx_resize.NEAREST_MODES))
    else:
        attrs["antialias"] = draw(st.sampled_from([0, 0, 1]))
    if mode == "cubic":
        attrs["cubic_coeff_a"] = draw(st.sampled_from([-0.75, -0.5, -0.6]))
        attrs["exclude_outside"] = draw(st.integers(0, 1))
    if draw(st.booleans()):
        attrs["extrapolation_value"] = draw(st.sampled_from([0.0, 10.0]))
    axes = None
    if draw(st.booleans()):
        count = draw(st.integers(1, rank))
        axes = draw(st.permutations(range(rank)))[:count]
        axes = [a - rank if draw(st.booleans()) else a for a in axes]
        attrs["axes"] = axes
    listed = len(axes) if axes is not None else rank
    use_scales = draw(st.booleans())
    scales = sizes = None
    if use_scales:
        scales = [draw(st.sampled_from([0.5, 0.6, 0.75, 1.0, 1.3, 1.5, 2.0, 2.5, 3.0])) for _ in range(listed)]
    else:
        sizes = [draw(st.integers(1, 9)) for _ in range(listed)]
        attrs["keep_aspect_ratio_policy"] = draw(st.sampled_from(["stretch", "stretch", "not_larger", "not_smaller"]))
    roi = None
    if attrs["coordinate_transformation_mode"] == "tf_crop_and_resize" and draw(st.booleans()):
        starts = [draw(st.sampled_from([0.0, 0.1, 0.25, -0.2])) for _ in range(listed)]
        ends = [draw(st.sampled_from([1.0, 0.8, 0.6, 1.3])) for _ in range(listed)]
        roi = starts + ends
    dtype = draw(st.sampled_from(["float32", "float32", "float64", "float16", "bfloat16"]))
    return x_shape, attrs, roi, scales, sizes, dtype, draw(st.integers(0, 2**32 - 1))


@FUZZ
@given(config=configurations())
def test_random_configurations_on_every_path(config):
    x_shape, attrs, roi, scales, sizes, dtype, seed = config
    try:
        dy_shape = resize_grad.expected_output_shape(resize_grad._attributes(attrs), x_shape, roi, scales, sizes)
    except ResampleGradError:
        return  # an invalid configuration: tests/errors/test_errors.py checks the refusals
    if 0 in dy_shape:
        return
    rng = np.random.default_rng(seed)
    numpy_dtype = NUMPY_DTYPES[dtype]
    dy = rng.standard_normal(dy_shape).astype(numpy_dtype)
    x = rng.standard_normal(x_shape).astype(numpy_dtype)
    model = grad_model(x_shape, dy_shape, attrs, roi, scales, sizes, dtype)
    feeds = grad_feeds(dy, x, roi, scales, sizes)
    (reference,) = run_model(model, feeds, "reference")
    for path in ("kernel", "function"):
        (ours,) = run_model(model, feeds, path)
        assert ours.shape == tuple(x_shape) and ours.dtype == numpy_dtype
        assert disagreement(ours, reference) <= TOLERANCE[dtype], (path, disagreement(ours, reference))
    if dtype in ("float32", "float64"):  # the portable forms (roi, scales and sizes are inputs: computed at run time)
        for scatter_free in (False, True):
            portable = opset.inline(model, scatter_free=scatter_free)
            session = onnxruntime.InferenceSession(portable.SerializeToString(), providers=["CPUExecutionProvider"])
            (ours,) = session.run(None, {i.name: feeds[i.name] for i in session.get_inputs()})
            assert disagreement(ours, reference) <= TOLERANCE[dtype], (scatter_free, disagreement(ours, reference))
    if dtype != "float32":
        return
    try:  # the adjoint identity with onnxruntime's forward, where it runs this configuration
        forward = resize_session(x_shape, attrs, roi, scales, sizes)
        with_v = forward.run(None, {"x": x})[0].astype(np.float64)
        with_zero = forward.run(None, {"x": np.zeros_like(x)})[0]
    except Exception as error:  # noqa: BLE001 - onnxruntime runs linear on ranks 2-5 and cubic on 2 and 4 only
        assert "supports" in str(error) or "only" in str(error) or "NOT_IMPLEMENTED" in str(error), str(error)
        return
    lhs = float(((with_v - with_zero) * dy).sum())
    rhs = float((x.astype(np.float64) * reference).sum())
    assert abs(lhs - rhs) <= 1e-5 * np.linalg.norm(x) * np.linalg.norm(reference), (lhs, rhs)


@pytest.mark.parametrize("policy, sizes", [("not_larger", [3, 100]), ("not_smaller", [3, 1])])
@pytest.mark.parametrize("path", ["reference", "kernel", "function"])
def test_aspect_policy_rounds_a_tie_as_onnxruntime(policy, sizes, path):
    """keep_aspect_ratio_policy: onnxruntime's output length is std::round(scale * L), half away from zero. X's H, W
    = 2, 3 with a joint scale 1.5: W gives 4.5, which Resize makes 5 (NumPy's round would make it 4)."""
    attrs = dict(mode="linear", axes=[2, 3], keep_aspect_ratio_policy=policy)
    x = np.random.default_rng(0).standard_normal((1, 1, 2, 3)).astype(np.float32)
    forward = resize_session(x.shape, attrs, None, None, sizes)
    y = forward.run(None, {"x": x})[0]
    assert y.shape == (1, 1, 3, 5)
    dy = np.random.default_rng(1).standard_normal(y.shape).astype(np.float32)
    model = grad_model(x.shape, y.shape, attrs, None, None, sizes, "float32")
    (dx,) = run_model(model, grad_feeds(dy, x, None, None, sizes), path)
    # the adjoint identity with onnxruntime's forward (linear: y = A x)
    assert abs(float((y.astype(np.float64) * dy).sum()) - float((x.astype(np.float64) * dx).sum())) <= 1e-5


# --------------------------------------------------------------------------- float64

def axis_matrix(attrs, length_in, length_out, scale, use_sizes, roi_start=0.0, roi_end=1.0):
    """onnxruntime's weights of one axis: its float Resize of an identity matrix along axis 0 only (the other
    axis has scale 1, an identity), as a [out, in] float64 matrix."""
    crop = attrs.get("coordinate_transformation_mode") == "tf_crop_and_resize"
    roi = [roi_start, 0.0, roi_end, 1.0] if crop else None
    session = (resize_session([length_in, length_in], attrs, roi, None, [length_out, length_in]) if use_sizes
               else resize_session([length_in, length_in], attrs, roi, [scale, 1.0], None))
    zero = session.run(None, {"x": np.zeros((length_in, length_in), np.float32)})[0]
    identity = session.run(None, {"x": np.eye(length_in, dtype=np.float32)})[0].astype(np.float64)
    return identity - zero  # the rows Resize extrapolates hold the constant in both: zero rows, as in the gradient


FLOAT64 = {  # name: (Resize attributes, x shape, scales (None: sizes), sizes[, roi])
    "linear_half_pixel_2d": (dict(mode="linear"), (2, 3, 5, 7), [1, 1, 1.7, 0.6], None),
    "linear_align_corners_sizes": (dict(mode="linear", coordinate_transformation_mode="align_corners"), (1, 2, 4, 6),
                                   None, [1, 2, 9, 5]),
    "linear_tf_crop": (dict(mode="linear", coordinate_transformation_mode="tf_crop_and_resize",
                            extrapolation_value=3.0),
                       (1, 1, 6, 5), None, [1, 1, 4, 7], [0, 0, 0.2, -0.1, 1, 1, 0.9, 1.2]),
    "cubic_half_pixel": (dict(mode="cubic"), (1, 2, 6, 5), [1, 1, 1.5, 2.25], None),
    "cubic_exclude_outside": (dict(mode="cubic", cubic_coeff_a=-0.5, exclude_outside=1), (1, 2, 6, 5), None,
                              [1, 2, 4, 9]),
    "cubic_asymmetric_down": (dict(mode="cubic", coordinate_transformation_mode="asymmetric"), (2, 1, 9, 8),
                              [1, 1, 0.5, 0.75], None),
    "antialias_linear": (dict(mode="linear", antialias=1), (1, 2, 12, 10), None, [1, 2, 5, 4]),
    "antialias_cubic": (dict(mode="cubic", antialias=1), (1, 2, 12, 10), [1, 1, 0.4, 0.6], None),
    "nearest_half_pixel_symmetric": (dict(mode="nearest", coordinate_transformation_mode="half_pixel_symmetric"),
                                     (1, 2, 7, 5), [1, 1, 2.3, 0.6], None),
    "linear_pytorch_half_pixel_to_one": (dict(mode="linear", coordinate_transformation_mode="pytorch_half_pixel"),
                                         (1, 2, 4, 6), None, [1, 2, 1, 3]),
}


@pytest.mark.parametrize("name", list(FLOAT64))
@pytest.mark.parametrize("path", ["reference", "function", "kernel"])
def test_float64_adjoint_with_onnxruntimes_weights(name, path):
    attrs, x_shape, scales, sizes, *roi = FLOAT64[name]
    roi = roi[0] if roi else None
    plan = _onnx_resize.plan("ResizeGrad", resize_grad._attributes(attrs), x_shape, roi, scales, sizes)
    y_shape = [p.output_size for p in plan]
    rng = np.random.default_rng(5)
    v = rng.standard_normal(x_shape)
    w = rng.standard_normal(y_shape)
    forward = v
    for axis, p in enumerate(plan):
        if p.output_size == p.input_size and p.scale == 1:
            continue
        m = axis_matrix(attrs, p.input_size, p.output_size, float(p.scale), sizes is not None, p.roi_start, p.roi_end)
        forward = np.moveaxis(np.tensordot(m, np.moveaxis(forward, axis, 0), axes=([1], [0])), 0, axis)
    model = grad_model(x_shape, y_shape, attrs, roi, scales, sizes, "float64")
    (dx,) = run_model(model, grad_feeds(w, v, roi, scales, sizes), path)
    lhs, rhs = float((forward * w).sum()), float((v * dx).sum())
    assert abs(lhs - rhs) <= 1e-12 * np.linalg.norm(v) * np.linalg.norm(dx), (lhs, rhs)
