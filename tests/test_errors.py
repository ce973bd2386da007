"""Bad input: a clear error naming the op, the argument and what was expected, on every path.

- reference: the NumPy reference raises ResampleGradError;
- function: attach() validates every node by strict shape inference and raises before a run;
- kernel: the native kernel returns an onnxruntime error (session creation for attributes, run for
  shapes), checked with symbolic input dims and no function bodies, so the kernel alone decides.
"""
from __future__ import annotations

import numpy as np
import onnxruntime
import pytest
from onnx import helper

from conftest import ONNX_DTYPES, one_node_model, run_model
from resample_grad import opset, runtime
from resample_grad.opset import ResampleGradError

GS = "GridSampler2DGrad"
GS_IN = {"grad_output": (1, 2, 3, 4), "input": (1, 2, 5, 5), "grid": (1, 3, 4, 2)}
N1 = "UpsampleNearestExact1dGrad"
N2 = "UpsampleNearestExact2dGrad"
BI = "ResizeBilinearV2Grad"
BI_IN = {"grads": (1, 2, 6, 6), "original_image": (1, 2, 3, 3)}


def gs(**changes):
    shapes = dict(GS_IN)
    shapes.update({k: v for k, v in changes.items() if k in shapes})
    attrs = {k: v for k, v in changes.items() if k not in shapes}
    return GS, shapes, ("grad_input", "grad_grid"), attrs


def bi(**changes):
    shapes = dict(BI_IN)
    shapes.update({k: v for k, v in changes.items() if k in shapes})
    attrs = {k: v for k, v in changes.items() if k not in shapes}
    return BI, shapes, ("y",), attrs


# (id, (op, input shapes, outputs, attributes), text the error must contain)
BAD = [
    ("gs-interpolation", gs(interpolation_mode="area"), "'interpolation_mode' must be one of 'bilinear', 'nearest', 'bicubic', got 'area'"),
    ("gs-padding", gs(padding_mode="wrap"), "'padding_mode' must be one of 'zeros', 'border', 'reflection', got 'wrap'"),
    ("gs-align-corners", gs(align_corners=2), "'align_corners' must be 0 or 1, got 2"),
    ("gs-rank-grad", gs(grad_output=(1, 2, 12)), "'grad_output' must be 4-D"),
    ("gs-rank-input", gs(input=(2, 5, 5)), "'input' must be 4-D"),
    ("gs-rank-grid", gs(grid=(1, 12, 2)), "'grid' must be 4-D"),
    ("gs-batch-grid", gs(grid=(2, 3, 4, 2)), "dimension 0 of 'grid' (2) must equal dimension 0 of 'input' (1)"),
    ("gs-channels", gs(grad_output=(1, 3, 3, 4)), "dimension 1 of 'grad_output' (3) must equal dimension 1 of 'input' (2)"),
    ("gs-height", gs(grid=(1, 4, 4, 2)), "dimension 2 of 'grad_output' (3) must equal dimension 1 of 'grid' (4)"),
    ("gs-width", gs(grid=(1, 3, 5, 2)), "dimension 3 of 'grad_output' (4) must equal dimension 2 of 'grid' (5)"),
    ("gs-empty-image", gs(input=(1, 2, 0, 5)), "'input' must have a positive H_in"),
    ("gs-grid-last-dim", gs(grid=(1, 3, 4, 3)), "'grid' must have last dimension 2"),
    ("n1-missing-input-size", (N1, {"grad_output": (1, 2, 8)}, ("grad_input",), {}), "'input_size' is required"),
    ("n1-input-size-length", (N1, {"grad_output": (1, 2, 8)}, ("grad_input",), dict(input_size=[1, 2, 4, 4])), "'input_size' must have 3 values"),
    ("n1-input-size-batch", (N1, {"grad_output": (1, 2, 8)}, ("grad_input",), dict(input_size=[3, 2, 4])), "'input_size'[0] is 3 but grad_output has 1"),
    ("n1-zero-length", (N1, {"grad_output": (1, 2, 8)}, ("grad_input",), dict(input_size=[1, 2, 0])), "'input_size' must have a positive L"),
    ("n1-output-size", (N1, {"grad_output": (1, 2, 8)}, ("grad_input",), dict(input_size=[1, 2, 4], output_size=[9])), "'output_size' is [9] but grad_output has L = 8"),
    ("n1-negative-scale", (N1, {"grad_output": (1, 2, 8)}, ("grad_input",), dict(input_size=[1, 2, 4], scales=-2.0)), "'scales' must be a finite scale >= 0"),
    ("n1-rank", (N1, {"grad_output": (1, 2, 8, 1)}, ("grad_input",), dict(input_size=[1, 2, 4])), "'grad_output' must be 3-D"),
    ("n2-input-size-length", (N2, {"grad_output": (1, 2, 8, 8)}, ("grad_input",), dict(input_size=[1, 2, 4])), "'input_size' must have 4 values"),
    ("n2-channels", (N2, {"grad_output": (1, 2, 8, 8)}, ("grad_input",), dict(input_size=[1, 5, 4, 4])), "'input_size'[1] is 5 but grad_output has 2"),
    ("n2-zero-width", (N2, {"grad_output": (1, 2, 8, 8)}, ("grad_input",), dict(input_size=[1, 2, 4, 0])), "'input_size' must have a positive W"),
    ("n2-negative-scale", (N2, {"grad_output": (1, 2, 8, 8)}, ("grad_input",), dict(input_size=[1, 2, 4, 4], scales_w=-1.0)), "'scales_w' must be a finite scale >= 0"),
    ("n2-output-size-length", (N2, {"grad_output": (1, 2, 8, 8)}, ("grad_input",), dict(input_size=[1, 2, 4, 4], output_size=[8])), "'output_size' must have 2 values"),
    ("n2-empty-grad", (N2, {"grad_output": (1, 2, 0, 8)}, ("grad_input",), dict(input_size=[1, 2, 4, 4])), "grad_output must have a positive H"),
    ("bi-both-modes", bi(align_corners=1, half_pixel_centers=1), "'align_corners' and 'half_pixel_centers' cannot both be 1"),
    ("bi-flag-value", bi(half_pixel_centers=3), "'half_pixel_centers' must be 0 or 1, got 3"),
    ("bi-scales-length", bi(scales=[2.0]), "'scales' must have 2 values"),
    ("bi-negative-scale", bi(scales=[2.0, -1.0]), "must be a finite scale >= 0"),
    ("bi-rank", bi(grads=(1, 2, 36)), "'grads' must be 4-D"),
    ("bi-batch", bi(original_image=(2, 2, 3, 3)), "dimension 0 of 'grads' (1) must equal dimension 0 of 'original_image' (2)"),
    ("bi-empty-image", bi(original_image=(1, 2, 0, 3)), "'original_image' must have a positive H_in"),
    ("bi-empty-grads", bi(grads=(1, 2, 6, 0)), "'grads' must have a positive W_out"),
]


def feeds_for(shapes, dtype=np.float32):
    rng = np.random.default_rng(0)
    return {name: rng.standard_normal(shape).astype(dtype) for name, shape in shapes.items()}


@pytest.mark.parametrize("spec,text", [pytest.param(b[1], b[2], id=b[0]) for b in BAD])
def test_reference_rejects(spec, text):
    op_type, shapes, outputs, attrs = spec
    model = one_node_model(op_type, shapes, outputs, attrs)
    with pytest.raises(ResampleGradError, match=None) as error:
        run_model(model, feeds_for(shapes), "reference")
    assert text in str(error.value)
    assert str(error.value).startswith(op_type)


@pytest.mark.parametrize("spec,text", [pytest.param(b[1], b[2], id=b[0]) for b in BAD])
def test_attach_rejects(spec, text):
    op_type, shapes, outputs, attrs = spec
    with pytest.raises(ResampleGradError) as error:
        opset.attach(one_node_model(op_type, shapes, outputs, attrs))
    assert text in str(error.value)
    assert str(error.value).startswith(op_type)


def dynamic_model(op_type, shapes, outputs, attrs, dtypes=None):
    """Symbolic dims and no function bodies: only the kernel can check the shapes."""
    dtypes = dtypes or {}
    node = opset.make_node(op_type, list(shapes), list(outputs), name="bad_node", **attrs)
    inputs = [helper.make_tensor_value_info(name, ONNX_DTYPES[dtypes.get(name, "float32")],
                                            [f"{name}_{i}" for i in range(len(shape))])
              for name, shape in shapes.items()]
    outs = [helper.make_tensor_value_info(name, ONNX_DTYPES["float32"], None) for name in outputs if name]
    graph = helper.make_graph([node], "bad", inputs, outs)
    return helper.make_model(graph, ir_version=9, opset_imports=[helper.make_opsetid("", 18),
                                                                 helper.make_opsetid(opset.DOMAIN, opset.VERSION)])


@pytest.mark.parametrize("spec,text", [pytest.param(b[1], b[2], id=b[0]) for b in BAD])
def test_kernel_rejects(spec, text):
    op_type, shapes, outputs, attrs = spec
    model = dynamic_model(op_type, shapes, outputs, attrs)
    with pytest.raises(Exception) as error:
        session = runtime.session(model)
        session.run(None, feeds_for(shapes))
    message = str(error.value)
    assert text in message
    assert f"{op_type} (node 'bad_node')" in message


@pytest.mark.parametrize("path", ["reference", "kernel"])
def test_mixed_dtypes_are_rejected(path):
    shapes = GS_IN
    feeds = feeds_for(shapes)
    feeds["grid"] = feeds["grid"].astype(np.float64)
    if path == "reference":
        with pytest.raises(ResampleGradError, match="input 'input' has dtype float32 but 'grad_output'|'grid' has dtype float64"):
            opset.OPS[GS].reference(feeds["grad_output"], feeds["input"], feeds["grid"])
        return
    model = dynamic_model(GS, shapes, ("grad_input", "grad_grid"), {}, dtypes={"grid": "float64"})
    with pytest.raises(Exception, match=GS):  # onnxruntime's type check names the op and the type
        runtime.session(model).run(None, feeds)


def test_non_float_dtype_is_rejected():
    with pytest.raises(ResampleGradError, match="input 'grad_output' has dtype int32; expected float16, bfloat16, float32 or float64"):
        opset.OPS[N1].reference(np.ones((1, 2, 4), np.int32), [1, 2, 2])
    model = dynamic_model(N1, {"grad_output": (1, 2, 4)}, ("grad_input",), dict(input_size=[1, 2, 2]))
    model.graph.input[0].type.tensor_type.elem_type = 6  # int32
    with pytest.raises(Exception, match=N1):
        runtime.session(model).run(None, {"grad_output": np.ones((1, 2, 4), np.int32)})


def test_unknown_op_and_attribute_are_rejected_by_attach():
    model = one_node_model(BI, BI_IN, ("y",), {})
    model.graph.node[0].op_type = "ResizeBicubicGrad"
    with pytest.raises(ResampleGradError, match="uses an op the resample_grad domain does not have"):
        opset.attach(model)
    model = one_node_model(BI, BI_IN, ("y",), dict(half_pixel=1))
    with pytest.raises(ResampleGradError, match="unknown attribute 'half_pixel'"):
        opset.attach(model)


def test_attach_refuses_old_default_opset():
    with pytest.raises(ResampleGradError, match="opset 16; the resample_grad functions need 17 or newer"):
        opset.attach(one_node_model(BI, BI_IN, ("y",), {}, opset_version=16))
