"""Converter out: resample_grad models to Ascend ATC (GE-named ONNX, parser plugin, GE IR C++), and back.

Expected GE attribute values are written out by hand from CANN's conventions (notes/tf_cann_spec.md
section 2.0): forward scales out/in stay, inverse scales are 1/scale, UpsampleBicubic2dGrad's are
resolved from the sizes.
"""
from __future__ import annotations

import copy
import json
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import ge_stub_includes, one_node_model
from resample_grad import models, opset, runtime
from resample_grad.converters import ascend
from resample_grad.converters.ascend_prototypes import (
    BOOL,
    FLOAT,
    GE_OP_FOR,
    INT,
    LIST_FLOAT,
    LIST_INT,
    PROTOTYPES,
    RESIZE_GRAD_MAPPINGS,
    STRING,
)
from resample_grad.opset import OPS, ResampleGradError
from resample_grad.paths import disagreement, random_inputs, run_on

ONNX_TYPE_OF = {STRING: onnx.AttributeProto.STRING, BOOL: onnx.AttributeProto.INT, INT: onnx.AttributeProto.INT,
                FLOAT: onnx.AttributeProto.FLOAT, LIST_INT: onnx.AttributeProto.INTS,
                LIST_FLOAT: onnx.AttributeProto.FLOATS}
A2, TRAINING, N950 = "Ascend910B1", "Ascend910", "Ascend950PR"

GS_IN = {"grad_output": (2, 3, 4, 5), "input": (2, 3, 6, 7), "grid": (2, 4, 5, 2)}
GS3_IN = {"grad": (1, 2, 3, 4, 5), "x": (1, 2, 4, 5, 6), "grid": (1, 3, 4, 5, 3)}
UP2 = {"grad_output": (2, 3, 10, 9)}
UP3 = {"grad_output": (1, 2, 4, 6, 9)}
V2 = {"grads": (2, 3, 8, 6), "original_image": (2, 3, 4, 5)}
DEFAULT_GS = dict(interpolation_mode="bilinear", padding_mode="zeros", align_corners=0)
# the GE GridSampler ops read grad and x channels last and write dx so; ResizeGradD reads and writes HWNC
CHANNELS_LAST_2D = ["Transpose", "Transpose", "GridSampler2DGrad", "Transpose"]
CHANNELS_LAST_3D = ["Transpose", "Transpose", "GridSampler3DGrad", "Transpose"]
HWNC = ["Transpose", "ResizeGradD", "Transpose"]

# (id, op, inputs, outputs, attributes, soc, GE op, the GE attributes expected, op types of the converted graph)
NODES = [
    *[(f"gs-{i}-{p}-{c}", "GridSampler2DGrad", GS_IN, ["grad_input", "grad_grid"],
       dict(interpolation_mode=i, padding_mode=p, align_corners=c), A2, "GridSampler2DGrad",
       dict(interpolation_mode=i, padding_mode=p, align_corners=c), CHANNELS_LAST_2D)
      for i, p, c in [("bilinear", "zeros", 0), ("nearest", "border", 1), ("bilinear", "border", 1),
                      ("nearest", "zeros", 0)]],
    ("gs-only-grid", "GridSampler2DGrad", GS_IN, ["", "grad_grid"], {}, A2, "GridSampler2DGrad", DEFAULT_GS,
     CHANNELS_LAST_2D[:-1]),  # dx unused: not transposed back
    *[(f"gs3-{i}-{p}-{c}", "GridSampler3DGrad", GS3_IN, ["dx", "dgrid"],
       dict(interpolation_mode=i, padding_mode=p, align_corners=c), soc, "GridSampler3DGrad",
       dict(interpolation_mode=i, padding_mode=p, align_corners=c), CHANNELS_LAST_3D)
      for i, p, c, soc in [("bilinear", "zeros", 0, A2), ("nearest", "border", 1, "Ascend910B3"),
                           ("bilinear", "reflection", 1, "Ascend910_9391"),
                           ("nearest", "reflection", 0, "Ascend910_9391")]],
    ("gs3-only-dx", "GridSampler3DGrad", GS3_IN, ["dx"], {}, A2, "GridSampler3DGrad", DEFAULT_GS, CHANNELS_LAST_3D),
    ("nx2-default", "UpsampleNearestExact2dGrad", {"grad_output": (2, 3, 8, 10)}, ["grad_input"],
     dict(input_size=[2, 3, 4, 5]), A2, "UpsampleNearestExact2dGrad",
     dict(output_size=[8, 10], input_size=[2, 3, 4, 5], scales_h=0.0, scales_w=0.0), None),
    ("nx2-scales-dynamic-batch", "UpsampleNearestExact2dGrad", UP2, ["grad_input"],
     dict(input_size=[-1, -1, 4, 6], scales_h=2.5, scales_w=1.5), N950, "UpsampleNearestExact2dGrad",
     dict(output_size=[10, 9], input_size=[2, 3, 4, 6], scales_h=2.5, scales_w=1.5), None),
    ("nx1", "UpsampleNearestExact1dGrad", {"grad_output": (2, 3, 11)}, ["grad_input"],
     dict(input_size=[2, 3, 5], scales=2.2), A2, "UpsampleNearestExact2dGrad",
     dict(output_size=[1, 11], input_size=[2, 3, 1, 5], scales_h=1.0, scales_w=2.2),
     ["Unsqueeze", "UpsampleNearestExact2dGrad", "Squeeze"]),
    ("n2-sizes", "UpsampleNearest2dGrad", UP2, ["grad_input"], dict(input_size=[2, 3, 4, 6], output_size=[10, 9]), A2,
     "UpsampleNearest2dGrad", dict(output_size=[10, 9], input_size=[2, 3, 4, 6], scales_h=0.0, scales_w=0.0), None),
    ("n2-scales", "UpsampleNearest2dGrad", UP2, ["grad_input"],
     dict(input_size=[2, 3, 4, 6], output_size=[10, 9], scales_h=2.5, scales_w=1.5), "Ascend910_9392",
     "UpsampleNearest2dGrad", dict(output_size=[10, 9], input_size=[2, 3, 4, 6], scales_h=2.5, scales_w=1.5), None),
    ("n1", "UpsampleNearest2dGrad", {"grad_output": (2, 3, 11)}, ["grad_input"],
     dict(input_size=[-1, 3, 5], output_size=[11], scales_w=2.2), A2, "UpsampleNearest2dGrad",
     dict(output_size=[1, 11], input_size=[2, 3, 1, 5], scales_h=1.0, scales_w=2.2),
     ["Unsqueeze", "UpsampleNearest2dGrad", "Squeeze"]),
    ("n3-sizes", "UpsampleNearest3dGrad", UP3, ["y"], dict(input_size=[1, 2, 2, 3, 4], output_size=[4, 6, 9]), A2,
     "UpsampleNearest3dGrad", dict(input_size=[1, 2, 2, 3, 4], output_size=[], scales=[2.0, 2.0, 2.25]), None),
    ("n3-scales", "UpsampleNearest3dGrad", UP3, ["y"], dict(input_size=[1, 2, 2, 3, 4], scales=[2.0, 2.0, 2.25]), N950,
     "UpsampleNearest3dGrad", dict(input_size=[1, 2, 2, 3, 4], output_size=[], scales=[2.0, 2.0, 2.25]), None),
    ("n3-some-scales", "UpsampleNearest3dGrad", {"grad_output": (1, 1, 4, 4, 4)}, ["y"],
     dict(input_size=[1, 1, 2, 2, 2], scales=[2.0, 0.0, 2.0]), A2, "UpsampleNearest3dGrad",
     dict(input_size=[1, 1, 2, 2, 2], output_size=[], scales=[2.0, 2.0, 2.0]), None),
    ("nx3-sizes", "UpsampleNearestExact3dGrad", UP3, ["y"], dict(input_size=[-1, 2, 2, 3, 4]), A2,
     "UpsampleNearestExact3dGrad", dict(input_size=[1, 2, 2, 3, 4], output_size=[], scales=[2.0, 2.0, 2.25]), None),
    ("nx3-scales", "UpsampleNearestExact3dGrad", UP3, ["y"], dict(input_size=[1, 2, 2, 3, 4], scales=[2.0, 2.0, 2.25]),
     "Ascend910_9381", "UpsampleNearestExact3dGrad",
     dict(input_size=[1, 2, 2, 3, 4], output_size=[], scales=[2.0, 2.0, 2.25]), None),
    ("bl2-scales", "UpsampleBilinear2dGrad", UP2, ["grad_input"],
     dict(input_size=[2, 3, 4, 6], output_size=[10, 9], scales_h=2.5, scales_w=1.5), A2, "UpsampleBilinear2dGrad",
     dict(output_size=[10, 9], input_size=[2, 3, 4, 6], align_corners=0, scales_h=0.4, scales_w=1 / 1.5), None),
    ("bl2-corners", "UpsampleBilinear2dGrad", UP2, ["grad_input"],
     dict(input_size=[2, 3, 4, 6], output_size=[10, 9], align_corners=1), A2, "UpsampleBilinear2dGrad",
     dict(output_size=[10, 9], input_size=[2, 3, 4, 6], align_corners=1, scales_h=0.0, scales_w=0.0), None),
    ("bl1-scale", "UpsampleBilinear2dGrad", {"grad_output": (2, 3, 11)}, ["grad_input"],
     dict(input_size=[2, 3, 5], output_size=[11], scales_w=2.2), A2, "UpsampleBilinear2dGrad",
     dict(output_size=[1, 11], input_size=[2, 3, 1, 5], align_corners=0, scales_h=1.0, scales_w=1 / 2.2),
     ["Unsqueeze", "UpsampleBilinear2dGrad", "Squeeze"]),
    ("bl1-corners", "UpsampleBilinear2dGrad", {"grad_output": (2, 3, 11)}, ["grad_input"],
     dict(input_size=[2, 3, 5], output_size=[11], align_corners=1), A2, "UpsampleBilinear2dGrad",
     dict(output_size=[1, 11], input_size=[2, 3, 1, 5], align_corners=1, scales_h=1.0, scales_w=0.0),
     ["Unsqueeze", "UpsampleBilinear2dGrad", "Squeeze"]),
    ("tl3-scales", "UpsampleTrilinear3dBackward", UP3, ["grad_input"],
     dict(input_size=[1, 2, 2, 3, 4], output_size=[4, 6, 9], scale_d=2.0, scale_w=2.25), A2,
     "UpsampleTrilinear3dBackward",
     dict(output_size=[4, 6, 9], input_size=[1, 2, 2, 3, 4], align_corners=0, scale_d=0.5, scale_h=0.0,
          scale_w=1 / 2.25), None),
    ("tl3-corners", "UpsampleTrilinear3dBackward", UP3, ["grad_input"],
     dict(input_size=[1, 2, 2, 3, 4], output_size=[4, 6, 9], align_corners=1), "Ascend910_9391",
     "UpsampleTrilinear3dBackward",
     dict(output_size=[4, 6, 9], input_size=[1, 2, 2, 3, 4], align_corners=1, scale_d=0.0, scale_h=0.0, scale_w=0.0),
     None),
    ("bc2-sizes", "UpsampleBicubic2dGrad", UP2, ["grad_input"], dict(input_size=[2, 3, 4, 6], output_size=[10, 9]), A2,
     "UpsampleBicubic2dGrad", dict(align_corners=0, scales_h=0.4, scales_w=6 / 9), None),
    ("bc2-scales", "UpsampleBicubic2dGrad", UP2, ["grad_input"],
     dict(input_size=[2, 3, 4, 6], output_size=[10, 9], scales_h=2.5), A2, "UpsampleBicubic2dGrad",
     dict(align_corners=0, scales_h=0.4, scales_w=6 / 9), None),
    ("bc2-corners", "UpsampleBicubic2dGrad", UP2, ["grad_input"],
     dict(input_size=[2, 3, 4, 6], output_size=[10, 9], align_corners=1, scales_h=2.5), A2, "UpsampleBicubic2dGrad",
     dict(align_corners=1, scales_h=3 / 9, scales_w=5 / 8), None),
    ("bc2-training", "UpsampleBicubic2dGrad", UP2, ["grad_input"],
     dict(input_size=[2, 3, 4, 6], output_size=[10, 9], scales_h=2.5), TRAINING, "ResizeGradD",
     dict(original_size=[2, 3, 4, 6], roi=[], scales=[2.5, 0.0], coordinate_transformation_mode="half_pixel",
          cubic_coeff_a=-0.75, exclude_outside=0, extrapolation_value=0.0, mode="cubic",
          nearest_mode="round_prefer_floor", data_format="HWNC"), HWNC),
    ("bc2-beyond-50x-on-a2", "UpsampleBicubic2dGrad", {"grad_output": (1, 2, 120, 3)}, ["grad_input"],
     dict(input_size=[1, 2, 2, 3], output_size=[120, 3], align_corners=1), A2, "ResizeGradD",
     dict(original_size=[1, 2, 2, 3], roi=[], scales=[0.0, 0.0], coordinate_transformation_mode="align_corners",
          cubic_coeff_a=-0.75, exclude_outside=0, extrapolation_value=0.0, mode="cubic",
          nearest_mode="round_prefer_floor", data_format="HWNC"), HWNC),
    ("aa-bl-down", "UpsampleBilinear2dAABackward", {"grad_output": (2, 3, 3, 4)}, ["grad_input"],
     dict(input_size=[2, 3, 7, 9], output_size=[3, 4], scales_h=0.5), N950, "UpsampleBilinear2dAABackward",
     dict(output_size=[3, 4], input_size=[2, 3, 7, 9], align_corners=0, scales_h=2.0, scales_w=0.0), None),
    ("aa-bl-corners", "UpsampleBilinear2dAABackward", {"grad_output": (2, 3, 3, 4)}, ["grad_input"],
     dict(input_size=[2, 3, 7, 9], align_corners=1), A2, "UpsampleBilinear2dAABackward",
     dict(output_size=[3, 4], input_size=[2, 3, 7, 9], align_corners=1, scales_h=0.0, scales_w=0.0), None),
    ("aa-bc-down", "UpsampleBicubic2dAAGrad", {"grad_output": (2, 3, 3, 4)}, ["grad_input"],
     dict(input_size=[2, 3, 7, 9], output_size=[3, 4], scales_w=0.25), A2, "UpsampleBicubic2dAAGrad",
     dict(output_size=[3, 4], input_size=[2, 3, 7, 9], align_corners=0, scales_h=0.0, scales_w=4.0), None),
    ("aa-bc-corners", "UpsampleBicubic2dAAGrad", {"grad_output": (2, 3, 3, 4)}, ["grad_input"],
     dict(input_size=[2, 3, 7, 9], output_size=[3, 4], align_corners=1), "Ascend910_9391", "UpsampleBicubic2dAAGrad",
     dict(output_size=[3, 4], input_size=[2, 3, 7, 9], align_corners=1, scales_h=0.0, scales_w=0.0), None),
    *[(f"bi-{c}-{h}", "ResizeBilinearV2Grad", V2, ["y"], dict(align_corners=c, half_pixel_centers=h, scales=s), A2,
       "ResizeBilinearV2Grad", dict(align_corners=c, half_pixel_centers=h, scales=list(s)), None)
      for c, h, s in [(1, 0, [0.0, 0.0]), (0, 1, [2.0, 1.2]), (0, 0, [0.0, 0.0])]],
    *[(f"bcv2-{c}", "ResizeBicubicV2Grad", V2, ["y"], dict(align_corners=c, scales=s), N950, "ResizeBicubicV2Grad",
       dict(align_corners=c, scales=s), None) for c, s in [(0, [2.0, 1.2]), (1, [0.0, 0.0])]],
    *[(f"lin-{c}", "ResizeLinearGrad", {"grads": (2, 3, 11), "original_image": (2, 3, 5)}, ["y"],
       dict(align_corners=c, scale=s), N950, "ResizeLinearGrad", dict(align_corners=c, scale=s), None)
      for c, s in [(0, 2.2), (1, 0.0)]],
]


def _model(op_type, inputs, outputs, attrs, dtype="float32"):
    return opset.attach(one_node_model(op_type, inputs, outputs, attrs, dtype))


def _ge_value(attribute):
    value = helper.get_attribute_value(attribute)
    return value.decode() if isinstance(value, bytes) else list(value) if isinstance(value, (list, tuple)) else value


def _compiles(*sources):
    for source in sources:
        result = subprocess.run(["g++", "-std=c++17", "-fsyntax-only", "-Wall", "-Werror", *ge_stub_includes(),
                                 str(source)], capture_output=True, text=True)
        assert result.returncode == 0, result.stderr


def _check_ge_node(node, expected_attrs):
    """The GE node against the prototype table: input, output and attribute names, order, types, values."""
    proto = PROTOTYPES[node.op_type]
    assert len(node.input) == len(proto.inputs) and len(node.output) == len(proto.outputs)
    assert all(node.output)  # GE always has every output
    names = [a.name for a in node.attribute]
    assert names == [a.name for a in proto.attrs if a.name in names]  # the prototype's order
    assert set(names) == set(expected_attrs)
    assert {a.name for a in proto.attrs if a.required} <= set(names)
    for attribute in node.attribute:
        assert attribute.type == ONNX_TYPE_OF[proto.attr(attribute.name).ge_type], attribute.name
        value, want = _ge_value(attribute), expected_attrs[attribute.name]
        if isinstance(want, float) or (isinstance(want, list) and want and isinstance(want[0], float)):
            assert value == pytest.approx(want, rel=1e-6), attribute.name
        else:
            assert value == want, attribute.name


def _same_node(a: onnx.NodeProto, b: onnx.NodeProto):
    assert ((a.op_type, a.domain, a.name, list(a.input), list(a.output))
            == (b.op_type, b.domain, b.name, list(b.input), list(b.output)))
    assert [x.SerializeToString() for x in a.attribute] == [x.SerializeToString() for x in b.attribute]


def _bit_identical(original, back, feeds):
    ours = runtime.run(runtime.session(original), feeds)
    returned = runtime.run(runtime.session(back), feeds)
    assert len(ours) == len(returned)
    for a, b in zip(ours, returned, strict=True):
        assert a.tobytes() == b.tobytes()


@pytest.mark.parametrize("case", NODES, ids=[n[0] for n in NODES])
def test_emitted_node_matches_the_prototype_table(case, tmp_path):
    _, op_type, inputs, outputs, attrs, soc, ge_op, expected, sequence = case
    model = _model(op_type, inputs, outputs, attrs)
    conversion = ascend.to_ascend(model, soc=soc, out_dir=tmp_path)
    (node,) = [n for n in conversion.model.graph.node if n.domain == ascend.GE_DOMAIN]
    assert node.op_type == ge_op
    assert [n.op_type for n in conversion.model.graph.node] == (sequence or [ge_op])
    _check_ge_node(node, expected)
    record = json.loads(node.doc_string)["resample_grad"]  # machine-readable: the original node, what was added
    assert record["node"]["op_type"] == op_type and len(record["node"]["attributes"]) == len(attrs)
    assert set(record["added"]) == {n.name for n in conversion.model.graph.node
                                    if n is not node and n.domain == "ai.onnx"}
    imports = {o.domain: o.version for o in conversion.model.opset_import}
    assert imports[ascend.GE_DOMAIN] == ascend.GE_VERSION and "ai.onnx" in imports and "" not in imports
    assert all(n.domain in (ascend.GE_DOMAIN, "ai.onnx") for n in conversion.model.graph.node)
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["nodes"][0]["ge_op"] == ge_op and all(c["ok"] for c in report["nodes"][0]["checks"])
    # the record gives back the very node, Unsqueeze / Squeeze and their axes gone
    back = ascend.from_ascend(onnx.load(tmp_path / "model.ascend.onnx"))
    assert len(back.graph.node) == 1
    _same_node(back.graph.node[0], model.graph.node[0])
    assert {i.name for i in back.graph.initializer} == {i.name for i in model.graph.initializer}
    _bit_identical(model, back, random_inputs(model, seed=5))
    plugin, graph = tmp_path / "plugins" / "resample_grad_onnx_plugin.cc", tmp_path / "graph" / "build_graph.cc"
    _compiles(plugin, graph)
    assert f'ge::AscendString("resample_grad.ge::1::{ge_op}")' in plugin.read_text()
    text = graph.read_text()
    for port in PROTOTYPES[ge_op].outputs:  # output descs set: several of these ops have no infershape
        assert f'.UpdateOutputDesc("{port}", ' in text
    for name in expected:
        assert f'.SetAttr("{name}", ' in text


# What CANN documents the GE GridSampler ops compute, in the layout it documents: grad and x channels last ("The format
# must be NHWC", hicann/ops-cv image/grid_sampler2_d_grad/op_graph/grid_sampler2_d_grad_proto.h; the 2-D and 3-D
# tilings read [N, (D,) H, W, C]), dx channels last, grid and dgrid as they are.
TO_FIRST = {4: [0, 3, 1, 2], 5: [0, 4, 1, 2, 3]}
TO_LAST = {4: [0, 2, 3, 1], 5: [0, 2, 3, 4, 1]}


def _emulate_ge_grid_samplers(model: onnx.ModelProto) -> onnx.ModelProto:
    """model.ascend.onnx with each GE GridSampler node replaced by that documented computation, done by the
    resample_grad op between transposes written here from the documentation (not by the converter)."""
    model = copy.deepcopy(model)
    nodes = []
    for k, node in enumerate(model.graph.node):
        if node.domain != ascend.GE_DOMAIN:
            nodes.append(node)
            continue
        assert node.op_type.startswith("GridSampler"), node.op_type
        rank = 5 if node.op_type == "GridSampler3DGrad" else 4
        grad, x, dx = f"emulated{k}_grad", f"emulated{k}_x", f"emulated{k}_dx"
        nodes += [helper.make_node("Transpose", [node.input[0]], [grad], perm=TO_FIRST[rank]),
                  helper.make_node("Transpose", [node.input[1]], [x], perm=TO_FIRST[rank])]
        nodes.append(opset.make_node(node.op_type, [grad, x, node.input[2]], [dx, node.output[1]],
                                     **{a.name: helper.get_attribute_value(a) for a in node.attribute}))
        nodes.append(helper.make_node("Transpose", [dx], [node.output[0]], perm=TO_LAST[rank]))
    for node in nodes:
        node.domain = "" if node.domain == "ai.onnx" else node.domain
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    imports = {o.domain or "ai.onnx": o.version for o in model.opset_import if o.domain != ascend.GE_DOMAIN}
    imports = {"" if d == "ai.onnx" else d: v for d, v in imports.items()}
    imports[opset.DOMAIN] = opset.VERSION
    del model.opset_import[:]
    model.opset_import.extend(helper.make_opsetid(d, v) for d, v in imports.items())
    return opset.attach(model)


GRID_CASES = [c for c in NODES if c[1].startswith("GridSampler")]


@pytest.mark.parametrize("case", GRID_CASES, ids=[c[0] for c in GRID_CASES])
def test_grid_samplers_in_cann_layout_compute_the_original(case):
    """The converted graph, its GE GridSampler nodes computing what CANN documents in CANN's layout, gives the original
    model's outputs bit for bit: the converter's transposes put grad and x channels last and bring dx back."""
    _, op_type, inputs, outputs, attrs, *_ = case
    model = _model(op_type, inputs, outputs, attrs)
    converted = ascend.to_ascend(model, soc=A2, wide_modes=True).model
    _bit_identical(model, _emulate_ge_grid_samplers(converted), random_inputs(model, seed=8))


# ResizeNearestNeighborV2Grad's size: CANN wants an int32 [H, W];
# (id, how size is given, GE-side op types, size input kind)
SIZES = [
    ("int32-constant", "int32 initializer", ["ResizeNearestNeighborV2Grad"], "same"),
    ("int64-constant", "int64 initializer", ["ResizeNearestNeighborV2Grad"], "new int32 initializer"),
]


def _nearest_v2_model(kind, attrs):
    elem = TensorProto.INT32 if kind.startswith("int32") else TensorProto.INT64
    node = opset.make_node("ResizeNearestNeighborV2Grad", ["grads", "size"], ["y"], name="nn_grad", **attrs)
    inputs = [helper.make_tensor_value_info("grads", TensorProto.FLOAT, [2, 3, 9, 10])]
    inits = []
    if kind.endswith("initializer"):
        inits.append(numpy_helper.from_array(np.array([4, 5], helper.tensor_dtype_to_np_dtype(elem)), "size"))
    else:
        inputs.append(helper.make_tensor_value_info("size", elem, [2]))
    graph = helper.make_graph([node], "nn", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              inits)
    return opset.attach(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18),
                                                                helper.make_opsetid(opset.DOMAIN, opset.VERSION)]))


@pytest.mark.parametrize("attrs", [dict(align_corners=1), dict(half_pixel_centers=1, scales=[2.25, 2.0]), {}],
                         ids=["corners", "half-pixel-scales", "legacy"])
@pytest.mark.parametrize("case", SIZES, ids=[c[0] for c in SIZES])
def test_nearest_neighbor_v2_size_is_int32(case, attrs, tmp_path):
    _, kind, sequence, size_input = case
    model = _nearest_v2_model(kind, attrs)
    conversion = ascend.to_ascend(model, soc=A2, out_dir=tmp_path)
    assert [n.op_type for n in conversion.model.graph.node] == sequence
    node = conversion.model.graph.node[-1]
    _check_ge_node(node, dict(dict(align_corners=0, half_pixel_centers=0, scales=[0.0, 0.0]), **attrs))
    inits = {i.name: i for i in conversion.model.graph.initializer}
    if size_input == "same":
        assert node.input[1] == "size"
    else:
        assert inits[node.input[1]].data_type == TensorProto.INT32
        assert numpy_helper.to_array(inits[node.input[1]]).tolist() == [4, 5]
    back = ascend.from_ascend(conversion.model)
    _same_node(back.graph.node[0], model.graph.node[0])
    assert len(back.graph.node) == 1
    assert {i.name for i in back.graph.initializer} == {i.name for i in model.graph.initializer}
    feeds = {"grads": np.random.default_rng(3).standard_normal((2, 3, 9, 10)).astype(np.float32)}
    _bit_identical(model, back, feeds)
    _compiles(tmp_path / "plugins" / "resample_grad_onnx_plugin.cc", tmp_path / "graph" / "build_graph.cc")
    graph_source = (tmp_path / "graph" / "build_graph.cc").read_text()  # a constant size is a Const in GE IR
    assert f'= Constant("{node.input[1]}", std::vector<int32_t>{{4, 5}}' in graph_source


@pytest.mark.parametrize("kind", ["int32 input", "int64 input"])
def test_nearest_neighbor_v2_run_time_size_is_not_converted_unchecked(kind):
    """A size fed at run time: the kernel's index map cannot be compared with the op's (align_corners 2 -> 3 differs
    on A2 for a constant size), so the node is refused, or kept as its standard-ONNX function."""
    model = _nearest_v2_model(kind, dict(align_corners=1))
    with pytest.raises(ResampleGradError, match="ResizeNearestNeighborV2Grad needs static spatial sizes"):
        ascend.to_ascend(model, soc=A2)
    (report,) = ascend.to_ascend(model, soc=A2, fallback="node").nodes
    assert report.action.startswith("fallback: ResizeNearestNeighborV2Grad needs static spatial sizes")


# --------------------------------------------------------------------------- ResizeGrad

def _resize_grad_model(x_shape, dy_shape, scales=None, sizes=None, dtype=TensorProto.FLOAT, **attrs):
    inputs, inits = ["dY", "X", ""], []
    if scales is not None:
        inputs.append("scales")
        inits.append(numpy_helper.from_array(np.array(scales, np.float32), "scales"))
    else:
        inputs += ["", "sizes"]
        inits.append(numpy_helper.from_array(np.array(sizes, np.int64), "sizes"))
    node = opset.make_node("ResizeGrad", inputs, ["dX"], name="resize_grad", **attrs)
    graph = helper.make_graph([node], "rg", [helper.make_tensor_value_info("dY", dtype, dy_shape),
                                             helper.make_tensor_value_info("X", dtype, x_shape)],
                              [helper.make_tensor_value_info("dX", dtype, None)], inits)
    return opset.attach(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18),
                                                                helper.make_opsetid(opset.DOMAIN, opset.VERSION)]))


LINEAR = dict(mode="linear", coordinate_transformation_mode="half_pixel")
# (id, attributes, X, dY, scales or None (then sizes = dY), soc, GE op, GE attributes, graph op types)
RESIZE_GRAD_NODES = [
    # A2 runs the TBE ResizeBilinearV2Grad, which reads no scales: 2.5 is not 12 / 5, so the next target
    ("linear-half-pixel-scales", LINEAR, [2, 3, 4, 5], [2, 3, 8, 12], [1, 1, 2.0, 2.5], A2, "UpsampleBilinear2dGrad",
     dict(output_size=[8, 12], input_size=[2, 3, 4, 5], align_corners=0, scales_h=0.5, scales_w=0.4), None),
    ("linear-half-pixel-sizes", LINEAR, [2, 3, 4, 5], [2, 3, 7, 3], None, TRAINING, "ResizeBilinearV2Grad",
     dict(align_corners=0, half_pixel_centers=1, scales=[0.0, 0.0]), None),
    ("linear-corners", dict(mode="linear", coordinate_transformation_mode="align_corners"), [2, 3, 4, 5], [2, 3, 7, 3],
     None, "Ascend310P3", "ResizeBilinearV2Grad", dict(align_corners=1, half_pixel_centers=0, scales=[0.0, 0.0]),
     None),
    ("linear-pytorch", dict(mode="linear", coordinate_transformation_mode="pytorch_half_pixel"), [2, 3, 4, 5],
     [2, 3, 7, 3], None, N950, "ResizeBilinearV2Grad", dict(align_corners=0, half_pixel_centers=1, scales=[0.0, 0.0]),
     None),
    ("linear-asymmetric", dict(mode="linear", coordinate_transformation_mode="asymmetric"), [2, 3, 4, 5], [2, 3, 8, 12],
     [1, 1, 2.0, 2.5], N950, "ResizeBilinearV2Grad", dict(align_corners=0, half_pixel_centers=0, scales=[2.0, 2.5]),
     None),
    ("nearest-floor-a2", dict(mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
     [2, 3, 4, 5], [2, 3, 8, 10], None, A2, "UpsampleNearest2dGrad",
     dict(output_size=[8, 10], input_size=[2, 3, 4, 5], scales_h=0.0, scales_w=0.0), None),
    ("nearest-floor-950", dict(mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
     [2, 3, 4, 5], [2, 3, 8, 10], None, N950, "ResizeNearestNeighborV2Grad",
     dict(align_corners=0, half_pixel_centers=0, scales=[0.0, 0.0]), None),
    ("nearest-exact",
     dict(mode="nearest", coordinate_transformation_mode="half_pixel", nearest_mode="round_prefer_ceil"),
     [2, 3, 4, 5], [2, 3, 10, 3], None, A2, "UpsampleNearestExact2dGrad",
     dict(output_size=[10, 3], input_size=[2, 3, 4, 5], scales_h=0.0, scales_w=0.0), None),
    ("nearest-tf-half-pixel",
     dict(mode="nearest", coordinate_transformation_mode="tf_half_pixel_for_nn", nearest_mode="floor"),
     [2, 3, 4, 5], [2, 3, 8, 12], [1, 1, 2.0, 2.5], A2, "ResizeNearestNeighborV2Grad",
     dict(align_corners=0, half_pixel_centers=1, scales=[2.0, 2.5]), None),
    ("nearest-tf-corners",
     dict(mode="nearest", coordinate_transformation_mode="align_corners", nearest_mode="round_prefer_ceil"),
     [2, 3, 4, 5], [2, 3, 6, 3], None, "Ascend910_9391", "ResizeNearestNeighborV2Grad",
     dict(align_corners=1, half_pixel_centers=0, scales=[0.0, 0.0]), None),
    ("cubic-950", dict(mode="cubic", coordinate_transformation_mode="half_pixel"), [2, 3, 4, 5], [2, 3, 8, 12],
     [1, 1, 2.0, 2.5], N950, "ResizeBicubicV2Grad", dict(align_corners=0, scales=[2.0, 2.5]), None),
    ("cubic-a2", dict(mode="cubic", coordinate_transformation_mode="half_pixel"), [2, 3, 4, 5], [2, 3, 8, 12],
     [1, 1, 2.0, 2.5], A2, "UpsampleBicubic2dGrad", dict(align_corners=0, scales_h=0.5, scales_w=0.4), None),
    ("cubic-corners-training", dict(mode="cubic", coordinate_transformation_mode="align_corners"), [2, 3, 4, 5],
     [2, 3, 7, 3], None, TRAINING, "ResizeGradD",
     dict(original_size=[2, 3, 4, 5], roi=[], scales=[0.0, 0.0], coordinate_transformation_mode="align_corners",
          cubic_coeff_a=-0.75, exclude_outside=0, extrapolation_value=0.0, mode="cubic",
          nearest_mode="round_prefer_floor", data_format="HWNC"), HWNC),
    ("antialias-linear", dict(LINEAR, antialias=1, exclude_outside=1), [2, 3, 8, 10], [2, 3, 4, 4], None, A2,
     "UpsampleBilinear2dAABackward", dict(output_size=[4, 4], input_size=[2, 3, 8, 10], align_corners=0, scales_h=0.0,
                                          scales_w=0.0), None),
    ("antialias-cubic", dict(mode="cubic", coordinate_transformation_mode="half_pixel", antialias=1, exclude_outside=1,
                             cubic_coeff_a=-0.5), [2, 3, 8, 10], [2, 3, 4, 5], [1, 1, 0.5, 0.5], N950,
     "UpsampleBicubic2dAAGrad",
     dict(output_size=[4, 5], input_size=[2, 3, 8, 10], align_corners=0, scales_h=2.0, scales_w=2.0), None),
]


@pytest.mark.parametrize("case", RESIZE_GRAD_NODES, ids=[c[0] for c in RESIZE_GRAD_NODES])
def test_resize_grad_becomes_the_ge_op_that_computes_it(case, tmp_path):
    _, attrs, x, dy, scales, soc, ge_op, expected, sequence = case
    model = _resize_grad_model(x, dy, scales=scales, sizes=None if scales else dy, **attrs)
    conversion = ascend.to_ascend(model, soc=soc, out_dir=tmp_path)
    ge = [n for n in conversion.model.graph.node if n.domain == ascend.GE_DOMAIN]
    assert [n.op_type for n in ge] == [ge_op], conversion.summary()
    _check_ge_node(ge[0], expected)
    report = conversion.nodes[0]
    assert report.action == "converted" and "references differ by" in report.mapping
    back = ascend.from_ascend(conversion.model)
    assert len(back.graph.node) == 1
    _same_node(back.graph.node[0], model.graph.node[0])
    assert {i.name for i in back.graph.initializer} == {i.name for i in model.graph.initializer}
    _bit_identical(model, back, random_inputs(model, seed=11))
    _compiles(tmp_path / "plugins" / "resample_grad_onnx_plugin.cc", tmp_path / "graph" / "build_graph.cc")


# ResizeGrad configurations no GE op computes: (id, attributes, X, dY, scales, why)
NO_ROW = "no row of the mapping table"
NOT_MAPPED = [
    ("nearest-round-prefer-floor", dict(mode="nearest"), [1, 2, 4, 5], [1, 2, 8, 10], None, NO_ROW),
    ("nearest-ceil", dict(mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="ceil"),
     [1, 2, 4, 5], [1, 2, 8, 10], None, NO_ROW),
    ("cubic-a-0.5", dict(mode="cubic", cubic_coeff_a=-0.5), [1, 2, 4, 5], [1, 2, 8, 10], None, NO_ROW),
    ("cubic-exclude-outside", dict(mode="cubic", exclude_outside=1), [1, 2, 4, 5], [1, 2, 8, 10], None, NO_ROW),
    ("cubic-asymmetric", dict(mode="cubic", coordinate_transformation_mode="asymmetric"), [1, 2, 4, 5], [1, 2, 8, 10],
     None, NO_ROW),
    ("linear-half-pixel-symmetric", dict(mode="linear", coordinate_transformation_mode="half_pixel_symmetric"),
     [1, 2, 4, 5], [1, 2, 8, 10], None, NO_ROW),
    ("linear-tf-crop", dict(mode="linear", coordinate_transformation_mode="tf_crop_and_resize"), [1, 2, 4, 5],
     [1, 2, 8, 10], None, NO_ROW),
    ("antialias-without-exclude", dict(LINEAR, antialias=1), [1, 2, 8, 10], [1, 2, 4, 5], None, NO_ROW),
    ("antialias-corners",
     dict(mode="linear", coordinate_transformation_mode="align_corners", antialias=1, exclude_outside=1),
     [1, 2, 8, 10], [1, 2, 4, 5], None, NO_ROW),
    ("pytorch-output-1", dict(mode="linear", coordinate_transformation_mode="pytorch_half_pixel"), [1, 2, 4, 5],
     [1, 2, 1, 10], None, "an output of length 1 reads coordinate 0 in ResizeGrad"),
    ("3-d", LINEAR, [1, 2, 5], [1, 2, 10], None, "the GE ops take 4-D NCHW"),
    ("resizes-c", LINEAR, [1, 2, 4, 5], [1, 4, 8, 10], None, "N or C is resized"),
    ("nearest-floor-index-boundary",
     dict(mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
     [1, 2, 16, 16], [1, 2, 35, 52], [1, 1, 2.2, 3.3], "the references disagree on these sizes"),
]


@pytest.mark.parametrize("case", NOT_MAPPED, ids=[c[0] for c in NOT_MAPPED])
def test_other_resize_grads_stay_their_function(case, tmp_path):
    _, attrs, x, dy, scales, why = case
    model = _resize_grad_model(x, dy, scales=scales, sizes=None if scales else dy, **attrs)
    conversion = ascend.to_ascend(model, soc=N950 if "boundary" in case[0] else A2, out_dir=tmp_path)
    report = conversion.nodes[0]
    assert report.ge_op is None and report.action.startswith("fallback: ") and why in report.action
    assert report.action.endswith("kept as its standard-ONNX function")
    assert not any(n.domain in (opset.DOMAIN, ascend.GE_DOMAIN) for n in conversion.model.graph.node)
    feeds = random_inputs(model, seed=12)
    got = onnxruntime.InferenceSession(conversion.model.SerializeToString()).run(None, feeds)
    np.testing.assert_allclose(got[0], run_on(model, feeds, "reference")["dX"], rtol=1e-5, atol=1e-5)


# The numeric decision. Shapes: (X H, W), (dY H, W) from sizes, and (X H, W) with the scales given.
MAPPING_SIZES = [((4, 5), (8, 10)), ((8, 10), (4, 5)), ((5, 7), (11, 13)), ((6, 9), (10, 4)), ((3, 3), (7, 2)),
                 ((1, 4), (5, 9)), ((7, 6), (7, 6)), ((10, 10), (15, 15)), ((9, 12), (3, 3)), ((16, 16), (64, 48)),
                 ((2, 13), (2, 2))]
MAPPING_SCALES = [(2.0, 2.0), (0.5, 0.5), (1.5, 2.5), (2.2, 3.3), (0.3, 0.7), (1.0, 3.0), (0.25, 4.0)]


def _mapping_cases():
    for x, dy in MAPPING_SIZES:
        yield x, dy, None
    for x, _ in MAPPING_SIZES:
        for scales in MAPPING_SCALES:
            dy = tuple(int(np.float32(s) * np.float32(n)) for s, n in zip(scales, x, strict=True))
            if min(dy) > 0:
                yield x, dy, scales


def _tap_products(op_type, attrs, x, dy, scales, extra=None):
    """The op's reference on the one-hot gradient of every dY position: row k of the result is
    out-row k of the forward's tap matrix product, each entry one weight per axis multiplied."""
    k = dy[0] * dy[1]
    grad = np.zeros((k, 1) + tuple(dy), np.float32)
    grad[np.arange(k), 0, np.arange(k) // dy[1], np.arange(k) % dy[1]] = 1
    x_shape = (k, 1) + tuple(x)
    reference = OPS[op_type].reference
    if op_type == "ResizeGrad":
        return reference(grad, np.zeros(x_shape, np.float32), None,
                         None if scales is None else np.array((1.0, 1.0) + tuple(scales), np.float32),
                         None if scales is not None else np.array((k, 1) + tuple(dy), np.int64), **attrs)
    forward = list(scales) if scales else [0.0, 0.0]
    if op_type.startswith("Upsample"):
        return reference(grad, input_size=list(x_shape), output_size=list(dy), scales_h=forward[0], scales_w=forward[1],
                         **extra)
    if op_type == "ResizeNearestNeighborV2Grad":
        return reference(grad, np.array(x, np.int32), scales=forward, **extra)
    return reference(grad, np.zeros(x_shape, np.float32), scales=forward, **extra)


def _row_attrs(row):
    attrs = dict(mode=row.mode, coordinate_transformation_mode=row.coordinate_modes[0], antialias=row.antialias)
    if row.nearest_mode:
        attrs["nearest_mode"] = row.nearest_mode
    if row.cubic_coeff_a is not None:
        attrs["cubic_coeff_a"] = row.cubic_coeff_a
    if row.exclude_outside is not None:
        attrs["exclude_outside"] = row.exclude_outside
    return attrs


def _agreement(attrs, target, fixed, x, dy, scales):
    """Largest difference of the two references' tap products, and its limit: 1e-6 per unit of the largest
    input length (float32 coordinates, rounded in a different order by onnxruntime and aten: a difference
    of one rounding of a coordinate c moves a weight by about c * 6e-8)."""
    ours = _tap_products("ResizeGrad", attrs, x, dy, scales)
    theirs = _tap_products(target, None, x, dy, scales, fixed)
    return float(np.abs(ours - theirs).max()), 1e-6 * max(1, *x)


MAPPING_TARGETS = [(row, target, fixed) for row in RESIZE_GRAD_MAPPINGS for target, fixed in row.targets]


@pytest.mark.parametrize("mapping", MAPPING_TARGETS, ids=[f"{r.name}->{t}" for r, t, _ in MAPPING_TARGETS])
def test_resize_grad_mapping_table(mapping):
    """Every row of the mapping table: the references of both ops agree on the table of shapes and scales.
    Nearest rows may disagree where a scale puts an index on a rounding boundary; there the converter must
    not use that target (it probes each model's own sizes)."""
    row, target, fixed = mapping
    attrs = _row_attrs(row)
    disagree, agree = [], 0
    for x, dy, scales in _mapping_cases():
        if row.outputs_above_one and min(dy) <= 1:
            continue
        worst, limit = _agreement(attrs, target, fixed, x, dy, scales)
        if worst <= limit:
            agree += 1
        else:
            disagree.append((x, dy, scales, worst))
    assert agree >= 50
    if row.mode != "nearest":
        assert not disagree, disagree
    for x, dy, scales, worst in disagree:  # an index moved: a whole tap, and the converter refuses it
        assert worst == 1.0
        model = _resize_grad_model([1, 2, *x], [1, 2, *dy], scales=None if scales is None else [1, 1, *scales],
                                   sizes=None if scales else [1, 2, *dy], **attrs)
        ctx = ascend._Context(model, ascend._shapes_and_types(model))
        targets, rejected, _ = ascend.resize_grad_targets(model.graph.node[0], ctx)
        assert target not in [t.op_type for t, _, _ in targets]
        assert any(f"-> {target}" in why for why in rejected)


# Configurations without a row, each with the op one might map it to: the references disagree.
NOT_EQUIVALENT = [
    (dict(mode="nearest", coordinate_transformation_mode="half_pixel", nearest_mode="round_prefer_floor"),
     "UpsampleNearestExact2dGrad", {}),
    (dict(mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="round_prefer_floor"),
     "UpsampleNearest2dGrad", {}),
    (dict(mode="nearest", coordinate_transformation_mode="align_corners", nearest_mode="round_prefer_floor"),
     "ResizeNearestNeighborV2Grad", {"align_corners": 1}),
    (dict(mode="linear", coordinate_transformation_mode="tf_half_pixel_for_nn"),
     "ResizeBilinearV2Grad", {"half_pixel_centers": 1}),
    (dict(mode="linear", coordinate_transformation_mode="half_pixel_symmetric"),
     "ResizeBilinearV2Grad", {"half_pixel_centers": 1}),
    (dict(mode="cubic", cubic_coeff_a=-0.5), "UpsampleBicubic2dGrad", {}),
    (dict(mode="cubic", exclude_outside=1), "UpsampleBicubic2dGrad", {}),
    (dict(mode="cubic", coordinate_transformation_mode="asymmetric"), "ResizeBicubicV2Grad", {}),
    (dict(LINEAR, antialias=1), "UpsampleBilinear2dAABackward", {}),
    (dict(mode="cubic", antialias=1, cubic_coeff_a=-0.75, exclude_outside=1), "UpsampleBicubic2dAAGrad", {}),
    (dict(mode="linear", coordinate_transformation_mode="align_corners", antialias=1, exclude_outside=1),
     "UpsampleBilinear2dAABackward", {"align_corners": 1}),
]


@pytest.mark.parametrize("case", NOT_EQUIVALENT, ids=[f"{c[0]}->{c[1]}" for c in NOT_EQUIVALENT])
def test_unmapped_configurations_differ(case):
    attrs, target, fixed = case
    assert not any(ascend._matches(row, _attributes(attrs)) for row in RESIZE_GRAD_MAPPINGS)
    worst = max(_agreement(attrs, target, fixed, x, dy, scales)[0] for x, dy, scales in _mapping_cases())
    assert worst > 1e-3  # far beyond rounding


def _attributes(attrs):
    from resample_grad.opset import resize_grad
    return resize_grad._attributes(attrs)


# --------------------------------------------------------------------------- device checks

LIMITS = [  # (id, op, inputs, attrs, dtype, soc, text of the error)
    ("double-on-training", "ResizeBilinearV2Grad", {"grads": (1, 2, 8, 8), "original_image": (1, 2, 4, 4)}, {},
     "float64", TRAINING, "dtype float64 is not supported by ResizeBilinearV2Grad on Atlas training series "
                          "(supported: float32; --cast inserts Cast nodes)"),
    ("bicubic", "GridSampler2DGrad", GS_IN, dict(interpolation_mode="bicubic"), "float32", "Ascend910B2",
     "interpolation_mode 'bicubic' is not documented for GridSampler2DGrad "
     "(documented: bilinear, nearest; --wide-modes"),
    ("reflection", "GridSampler2DGrad", GS_IN, dict(padding_mode="reflection"), "float32", "Ascend910B2",
     "padding_mode 'reflection' is not documented for GridSampler2DGrad"),
    ("gs2-not-on-950", "GridSampler2DGrad", GS_IN, {}, "float32", N950,
     "GE op GridSampler2DGrad is not available on Ascend 950 "
     "(it runs on Atlas training series, Atlas A2, Atlas A3)"),
    ("gs3-double-on-training", "GridSampler3DGrad", GS3_IN, {}, "float64", TRAINING,
     "dtype float64 is not supported by GridSampler3DGrad on Atlas training series (supported: float16, float32"),
    ("gs2-ai-cpu-on-training", "GridSampler2DGrad", GS_IN, {}, "float32", TRAINING,
     "GridSampler2DGrad runs as an AI CPU task on Atlas training series, whose source is not public"),
    ("gs3-layout-on-950", "GridSampler3DGrad", GS3_IN, {}, "float32", N950,
     "GridSampler3DGrad on Ascend 950 reads its tensors channels first (SIMT kernels) or channels last"),
    ("gs2-double-ai-cpu", "GridSampler2DGrad", GS_IN, {}, "float64", A2,
     "float64 runs GridSampler2DGrad as an AI CPU task (not established); --cast runs it in float32"),
    ("gs3-not-on-inference", "GridSampler3DGrad", GS3_IN, {}, "float32", "Ascend310P1",
     "GE op GridSampler3DGrad is not available on Atlas inference series (it runs on Atlas training series, Atlas A2, "
     "Atlas A3, Ascend 950)"),
    ("downscale-60x", "UpsampleNearestExact2dGrad", {"grad_output": (1, 2, 2, 4)}, dict(input_size=[1, 2, 120, 8]),
     "float32", A2, "downscale 120 -> 2 (60x) exceeds the device limit of 50x"),
    ("nx2-not-on-training", "UpsampleNearestExact2dGrad", {"grad_output": (1, 2, 8, 8)}, dict(input_size=[1, 2, 4, 4]),
     "float32", TRAINING, "GE op UpsampleNearestExact2dGrad is not available on Atlas training series "
                          "(it runs on Atlas A2, Atlas A3, Ascend 950)"),
    ("n2-downscale-60x", "UpsampleNearest2dGrad", {"grad_output": (1, 2, 4, 2)},
     dict(input_size=[1, 2, 8, 120], output_size=[4, 2]),
     "float32", A2, "downscale 120 -> 2 (60x) exceeds the device limit of 50x"),
    ("n2-not-on-950", "UpsampleNearest2dGrad", {"grad_output": (1, 2, 8, 8)},
     dict(input_size=[1, 2, 4, 4], output_size=[8, 8]),
     "float32", N950, "GE op UpsampleNearest2dGrad is not available on Ascend 950 (it runs on Atlas A2, Atlas A3)"),
    ("n2-double", "UpsampleNearest2dGrad", {"grad_output": (1, 2, 8, 8)},
     dict(input_size=[1, 2, 4, 4], output_size=[8, 8]),
     "float64", A2, "dtype float64 is not supported by UpsampleNearest2dGrad on Atlas A2 "
                    "(supported: bfloat16, float16, float32"),
    ("n3-upscale-60x", "UpsampleNearest3dGrad", {"grad_output": (1, 1, 2, 2, 120)}, dict(input_size=[1, 1, 2, 2, 2]),
     "float32", A2, "upscale 2 -> 120 (inverse scale 0.0167) exceeds the device limit of 50x (inverse scale >= 0.02)"),
    ("n3-floor-check", "UpsampleNearest3dGrad", {"grad_output": (1, 1, 4, 4, 5)},
     dict(input_size=[1, 1, 2, 2, 2], scales=[2.0, 2.0, 2.0]),
     "float32", A2, "UpsampleNearest3dGrad on Atlas A2 computes another gradient on W (2 -> 5): output 2 reads "
                    "input 0 on the device, 1 in the op"),
    ("nx3-double", "UpsampleNearestExact3dGrad", UP3, dict(input_size=[1, 2, 2, 3, 4]), "float64", N950,
     "dtype float64 is not supported by UpsampleNearestExact3dGrad on Ascend 950 "
     "(supported: bfloat16, float16, float32"),
    ("bl2-upscale-100x", "UpsampleBilinear2dGrad", {"grad_output": (1, 2, 200, 4)},
     dict(input_size=[1, 2, 2, 4], output_size=[200, 4]), "float32", "Ascend910_9391",
     "upscale 2 -> 200 (inverse scale 0.01) exceeds the device limit of 50x (inverse scale >= 0.02)"),
    ("bl2-scale-given", "UpsampleBilinear2dGrad", {"grad_output": (1, 2, 8, 4)},
     dict(input_size=[1, 2, 4, 4], output_size=[8, 4], scales_h=64.0), "float32", A2,
     "upscale 4 -> 8 (inverse scale 0.0156) exceeds the device limit of 50x (inverse scale >= 0.02)"),
    ("bl2-not-on-950", "UpsampleBilinear2dGrad", UP2, dict(input_size=[2, 3, 4, 6], output_size=[10, 9]), "float32",
     N950, "GE op UpsampleBilinear2dGrad is not available on Ascend 950 (it runs on Atlas A2, Atlas A3)"),
    ("tl3-upscale-60x", "UpsampleTrilinear3dBackward", {"grad_output": (1, 1, 120, 2, 2)},
     dict(input_size=[1, 1, 2, 2, 2], output_size=[120, 2, 2]), "float32", A2,
     "upscale 2 -> 120 (inverse scale 0.0167) exceeds the device limit of 50x (inverse scale >= 0.02)"),
    ("bc2-not-on-950", "UpsampleBicubic2dGrad", UP2, dict(input_size=[2, 3, 4, 6], output_size=[10, 9]), "float32",
     N950, "GE op UpsampleBicubic2dGrad is not available on Ascend 950 (it runs on Atlas A2, Atlas A3); "
           "not ResizeGradD: GE op ResizeGradD is not available on Ascend 950"),
    ("bc2-double-on-training", "UpsampleBicubic2dGrad", UP2, dict(input_size=[2, 3, 4, 6], output_size=[10, 9]),
     "float64", TRAINING, "dtype float64 is not supported by ResizeGradD on Atlas training series "
                           "(supported: float16, float32"),
    ("aa-bl-upscale-60x", "UpsampleBilinear2dAABackward", {"grad_output": (1, 1, 120, 2)},
     dict(input_size=[1, 1, 2, 2]), "float32", N950,
     "upscale 2 -> 120 (inverse scale 0.0167) exceeds the device limit of 50x (inverse scale >= 0.02)"),
    ("aa-bc-not-on-training", "UpsampleBicubic2dAAGrad", {"grad_output": (1, 1, 4, 4)},
     dict(input_size=[1, 1, 8, 8], output_size=[4, 4]), "float32", TRAINING,
     "GE op UpsampleBicubic2dAAGrad is not available on Atlas training series "
     "(it runs on Atlas A2, Atlas A3, Ascend 950)"),
    ("bcv2-not-on-a2", "ResizeBicubicV2Grad", V2, {}, "float32", A2,
     "GE op ResizeBicubicV2Grad is not available on Atlas A2 (it runs on Ascend 950)"),
    ("lin-not-on-a3", "ResizeLinearGrad", {"grads": (1, 2, 8), "original_image": (1, 2, 4)}, {}, "float32",
     "Ascend910_9391", "GE op ResizeLinearGrad is not available on Atlas A3 (it runs on Ascend 950)"),
    ("not-on-200i", "ResizeBilinearV2Grad", {"grads": (1, 2, 8, 8), "original_image": (1, 2, 4, 4)}, {}, "float32",
     "Ascend310B1", "GE op ResizeBilinearV2Grad is not available on Atlas 200I/500 A2"),
]

OUTPUTS = {"GridSampler2DGrad": ["grad_input", "grad_grid"], "GridSampler3DGrad": ["dx", "dgrid"]}


@pytest.mark.parametrize("case", LIMITS, ids=[c[0] for c in LIMITS])
def test_device_limits_are_errors_naming_the_node(case, tmp_path):
    _, op_type, inputs, attrs, dtype, soc, text = case
    output = OPS[op_type].schema.outputs[0].name
    outputs = OUTPUTS.get(op_type, [output])
    model = opset.attach(one_node_model(op_type, inputs, outputs, attrs, dtype))
    model.graph.node[0].name = "the_node"
    with pytest.raises(ResampleGradError) as error:
        ascend.to_ascend(model, soc=soc, out_dir=tmp_path)
    assert f"to_ascend: node 'the_node' ({op_type}) on {soc}: {text}" in str(error.value)
    assert str(error.value).endswith("; --fallback node replaces it with standard ONNX")
    # --fallback node: the node becomes its standard-ONNX body, and the model still runs
    conversion = ascend.to_ascend(model, soc=soc, out_dir=tmp_path / "fallback", fallback="node")
    assert conversion.nodes[0].action.startswith("fallback: ")
    assert not any(n.domain in (opset.DOMAIN, ascend.GE_DOMAIN) for n in conversion.model.graph.node)
    feeds = random_inputs(model, seed=8)
    got = runtime.run(onnxruntime.InferenceSession(conversion.model.SerializeToString()), feeds)
    for a, b in zip(got, run_on(model, feeds, "reference").values(), strict=True):
        assert disagreement(a, b) <= (1e-5 if dtype in ("float32", "float64") else 1e-2)


def test_resize_grad_on_a_product_without_its_ge_op(tmp_path):
    model = _resize_grad_model([1, 2, 4, 5], [1, 2, 8, 10], sizes=[1, 2, 8, 10], mode="nearest",
                               coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    with pytest.raises(ResampleGradError) as error:
        ascend.to_ascend(model, soc=TRAINING, out_dir=tmp_path)
    assert ("node 'resize_grad' (ResizeGrad) on Ascend910: GE op UpsampleNearest2dGrad is not available on Atlas "
            "training series (it runs on Atlas A2, Atlas A3); not ResizeNearestNeighborV2Grad: GE op "
            "ResizeNearestNeighborV2Grad is not available on Atlas training series") in str(error.value)


@pytest.mark.parametrize("op_type,inputs,attrs,casts", [
    ("GridSampler2DGrad", GS_IN, {}, 5),  # three inputs to float32, two outputs back to double
    ("UpsampleBicubic2dGrad", UP2, dict(input_size=[2, 3, 4, 6], output_size=[10, 9]), 2),  # ResizeGradD: fp16, fp32
    ("UpsampleNearestExact3dGrad", UP3, dict(input_size=[1, 2, 2, 3, 4]), 2),
])
def test_cast_wraps_an_unsupported_dtype(op_type, inputs, attrs, casts, tmp_path):
    outputs = OUTPUTS.get(op_type, [OPS[op_type].schema.outputs[0].name])
    model = opset.attach(one_node_model(op_type, inputs, outputs, attrs, "float64"))
    soc = TRAINING if op_type == "UpsampleBicubic2dGrad" else A2  # GridSampler: the AI Core kernel, not AI CPU
    conversion = ascend.to_ascend(model, soc=soc, out_dir=tmp_path, cast=True)
    assert len([n for n in conversion.model.graph.node if n.op_type == "Cast"]) == casts
    assert conversion.nodes[0].action == "converted with Cast"
    assert "--cast: Cast to float32 around the op" in json.dumps(json.loads((tmp_path / "report.json").read_text()))
    # the GE op computes in float32 inside: float32 accuracy
    feeds = random_inputs(model, seed=9)
    lowered_ge = ascend.from_ascend(conversion.model)  # the record: the double node again, Casts gone
    _same_node(lowered_ge.graph.node[0], model.graph.node[0])
    assert len(lowered_ge.graph.node) == 1
    _bit_identical(model, lowered_ge, feeds)
    _compiles(tmp_path / "graph" / "build_graph.cc")


def test_wide_modes_accept_bicubic_and_reflection(tmp_path):
    model = opset.attach(one_node_model("GridSampler2DGrad", GS_IN, ["grad_input", "grad_grid"],
                                        dict(interpolation_mode="bicubic", padding_mode="reflection")))
    conversion = ascend.to_ascend(model, soc=A2, out_dir=tmp_path, wide_modes=True)
    (node,) = [n for n in conversion.model.graph.node if n.domain == ascend.GE_DOMAIN]
    assert helper.get_attribute_value(node.attribute[0]) == b"bicubic"


def test_unknown_soc_lists_the_known_ones():
    with pytest.raises(ResampleGradError, match="unknown --soc 'Ascend999'; known: Atlas training series: Ascend910"):
        ascend.to_ascend(models.decoder_step(), soc="Ascend999")


# --------------------------------------------------------------------------- whole models and files

# The example models the converter refuses as a whole: none (registration_step's opset-20 5-D GridSample and 5-D
# Resize become GE forward ops, converters/ascend_forward.py; with --fallback all, their standard-op bodies).
REFUSED = {}
REFUSED_ALL = {}


def _example_models(refused):
    return [pytest.param(name, marks=pytest.mark.xfail(raises=ResampleGradError, strict=True, reason=refused[name]))
            if name in refused else name for name in models.BUILDERS]


EXAMPLE_MODELS = _example_models(REFUSED)
EXAMPLE_SOC = {"resize_bicubic_v2_grad": N950, "resize_linear_grad": N950}  # their GE ops are Ascend 950's only


@pytest.mark.parametrize("name", EXAMPLE_MODELS)
def test_example_models_round_trip_and_compile(name, tmp_path):
    model = models.BUILDERS[name]()
    conversion = ascend.to_ascend(model, soc=EXAMPLE_SOC.get(name, A2), out_dir=tmp_path)
    if not any(n.domain == ascend.GE_DOMAIN for n in conversion.model.graph.node):
        # resize_training_step: a ResizeGrad of run-time scales has no GE op; it stays its function
        assert all(r.action.endswith("kept as its standard-ONNX function") for r in conversion.nodes), conversion.nodes
        return
    feeds = models.example_inputs(name, seed=6, model=model)
    back = ascend.from_ascend(onnx.load(tmp_path / "model.ascend.onnx"))
    _bit_identical(model, back, feeds)
    _compiles(tmp_path / "plugins" / "resample_grad_onnx_plugin.cc", tmp_path / "graph" / "build_graph.cc")
    plugin = (tmp_path / "plugins" / "resample_grad_onnx_plugin.cc").read_text()
    for ge_type in {n.op_type for n in conversion.model.graph.node if n.domain == ascend.GE_DOMAIN}:
        assert f'ge::AscendString("resample_grad.ge::1::{ge_type}")' in plugin
    atc = (tmp_path / "atc.sh").read_text()
    assert "atc --model=model.ascend.onnx --framework=5" in atc and f"--soc_version={EXAMPLE_SOC.get(name, A2)}" in atc


@pytest.mark.parametrize("name", _example_models(REFUSED_ALL))
def test_fallback_all_is_standard_onnx_and_runs_without_the_library(name, tmp_path):
    model = models.BUILDERS[name]()
    conversion = ascend.to_ascend(model, soc=TRAINING, out_dir=tmp_path, fallback="all")
    lowered = conversion.model
    assert not lowered.functions
    assert {o.domain for o in lowered.opset_import} <= {"", "ai.onnx"}
    assert all(n.domain in ("", "ai.onnx") for n in lowered.graph.node)
    assert max(o.version for o in lowered.opset_import) <= 18
    onnx.checker.check_model(lowered, full_check=True)
    assert not (tmp_path / "plugins").exists()  # nothing for ATC to load
    feeds = models.example_inputs(name, seed=7, model=model)
    ours = onnxruntime.InferenceSession(lowered.SerializeToString()).run(None, feeds)
    reference = run_on(model, feeds, "reference")
    for got, want in zip(ours, reference.values(), strict=True):
        assert disagreement(got, want) <= 1e-5  # max |diff| / max(|reference|, 1): float32 sums


def _everything_model():
    """A training step's worth of standard ops (Conv, BatchNormalization, Relu, MaxPool, AveragePool, Gemm) beside
    resample_grad ops of each kind."""
    f = TensorProto.FLOAT
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name) for name, shape in
             [("w", (4, 3, 3, 3)), ("scale", (4,)), ("bias", (4,)), ("mean", (4,)), ("gemm_w", (10, 32))]]
    inits.append(numpy_helper.from_array(np.ones(4, np.float32), "var"))
    inits.append(numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "up"))
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c", "scale", "bias", "mean", "var"], ["b"]),
        helper.make_node("Relu", ["b"], ["r"]),
        helper.make_node("MaxPool", ["r"], ["m"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("AveragePool", ["m"], ["a"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["a"], ["flat"]),
        helper.make_node("Gemm", ["flat", "gemm_w"], ["logits"], transB=1),
        opset.make_node("UpsampleNearestExact2dGrad", ["m"], ["n_grad"], name="nearest_grad", input_size=[1, 4, 2, 4]),
        opset.make_node("ResizeGrad", ["r", "small", "", "up"], ["r_grad"], name="resize_grad", mode="linear"),
        opset.make_node("UpsampleBilinear2dGrad", ["m"], ["b_grad"], name="bilinear_grad", input_size=[1, 4, 2, 4],
                        output_size=[4, 8], align_corners=1),
    ]
    graph = helper.make_graph(nodes, "everything", [helper.make_tensor_value_info("x", f, [1, 3, 8, 16]),
                                                   helper.make_tensor_value_info("small", f, [1, 4, 4, 8])],
                              [helper.make_tensor_value_info(n, f, None)
                               for n in ("logits", "n_grad", "r_grad", "b_grad")],
                              inits)
    return opset.attach(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18),
                                                                helper.make_opsetid(opset.DOMAIN, opset.VERSION)]))


def test_standard_ops_beside_resample_grad_ops(tmp_path):
    model = _everything_model()
    conversion = ascend.to_ascend(model, soc=A2, out_dir=tmp_path)
    types = [(n.domain, n.op_type) for n in conversion.model.graph.node]
    for op in ("Conv", "BatchNormalization", "Relu", "MaxPool", "AveragePool", "Flatten", "Gemm"):
        assert ("ai.onnx", op) in types  # left to ATC's own ONNX parser, with the explicit domain
    assert [r.ge_op for r in conversion.nodes] == ["UpsampleNearestExact2dGrad", "ResizeBilinearV2Grad",
                                                   "UpsampleBilinear2dGrad"]
    assert [r.action for r in conversion.nodes] == ["converted"] * 3
    imports = {o.domain: o.version for o in conversion.model.opset_import}
    assert imports == {"ai.onnx": 18, ascend.GE_DOMAIN: 1}
    back = ascend.from_ascend(conversion.model)
    _bit_identical(model, back, random_inputs(model, seed=13))
    _compiles(tmp_path / "plugins" / "resample_grad_onnx_plugin.cc", tmp_path / "graph" / "build_graph.cc")
    graph = (tmp_path / "graph" / "build_graph.cc").read_text()
    assert "Conv" not in graph  # GE IR holds only the GE ops; their inputs are Data nodes


def test_from_ascend_without_records(tmp_path):
    """An older model.ascend.onnx (no doc_string records): GE ops with this package's conventions read back
    by name with their Unsqueeze / Squeeze left in place (the same computation); others are refused."""
    model = models.upsample_nearest_exact1d_grad()
    conversion = ascend.to_ascend(model, soc=A2)
    for node in conversion.model.graph.node:
        node.doc_string = ""
    back = ascend.from_ascend(conversion.model)
    assert [n.op_type for n in back.graph.node] == ["Unsqueeze", "UpsampleNearestExact2dGrad", "Squeeze"]
    _bit_identical(model, back, random_inputs(model, seed=14))
    bilinear = ascend.to_ascend(_model("UpsampleBilinear2dGrad", UP2, ["grad_input"],
                                       dict(input_size=[2, 3, 4, 6], output_size=[10, 9])), soc=A2).model
    bilinear.graph.node[0].doc_string = ""
    with pytest.raises(ResampleGradError, match="node '' \\(UpsampleBilinear2dGrad\\) has no resample_grad record"):
        ascend.from_ascend(bilinear)


def test_every_op_of_the_domain_has_its_ge_ops():
    assert set(GE_OP_FOR) == set(OPS) - {"ResizeGrad"}  # every op of the domain has its GE op(s)
    assert {t for row in RESIZE_GRAD_MAPPINGS for t, _ in row.targets} <= set(GE_OP_FOR)


def test_all_ge_ops_in_one_model_compile(tmp_path):
    """One model that uses every GE op: the plugin registers each, GE IR builds each."""
    nodes, inputs, outputs = [], {}, []
    f = TensorProto.FLOAT
    for k, (_, op_type, node_inputs, node_outputs, attrs, soc, ge_op, _, _) in enumerate(NODES):
        if soc != A2 or any(ge_op == n[0] for n in nodes):
            continue
        names = {i: f"{i}_{k}" for i in node_inputs}
        inputs.update({names[i]: s for i, s in node_inputs.items()})
        outs = [f"{o}_{k}" if o else "" for o in node_outputs]
        outputs += [o for o in outs if o]
        nodes.append((ge_op, opset.make_node(op_type, list(names.values()), outs, name=f"node_{k}", **attrs)))
    graph = helper.make_graph([n for _, n in nodes], "all",
                              [helper.make_tensor_value_info(n, f, s) for n, s in inputs.items()],
                              [helper.make_tensor_value_info(o, f, None) for o in outputs])
    model = opset.attach(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18),
                                                                 helper.make_opsetid(opset.DOMAIN, opset.VERSION)]))
    conversion = ascend.to_ascend(model, soc=A2, out_dir=tmp_path)
    used = {n.op_type for n in conversion.model.graph.node if n.domain == ascend.GE_DOMAIN}
    # every GE op that runs on an A2 (ResizeBicubicV2Grad and ResizeLinearGrad: 950 only, compiled per node above)
    on_a2 = {ge for ge, proto in PROTOTYPES.items() if "Atlas A2" in proto.dtypes}
    assert used == on_a2 - {"ResizeNearestNeighborV2Grad"}
    _compiles(tmp_path / "plugins" / "resample_grad_onnx_plugin.cc", tmp_path / "graph" / "build_graph.cc")
    report = json.loads((tmp_path / "report.json").read_text())
    assert {n["ge_op"] for n in report["nodes"]} == used
    assert all(n["attributes"] for n in report["nodes"])


def test_cli_convert(tmp_path):
    path = tmp_path / "decoder.onnx"
    onnx.save(models.decoder_step(), path)
    result = subprocess.run([sys.executable, "-m", "resample_grad", "convert", str(path), "--target", "ascend", "--soc",
                             A2, "-o", str(tmp_path / "out")], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "nearest_backward (UpsampleNearestExact2dGrad) -> UpsampleNearestExact2dGrad: converted" in result.stdout
    assert (tmp_path / "out" / "model.ascend.onnx").is_file()
    bad = subprocess.run([sys.executable, "-m", "resample_grad", "convert", str(path), "--soc", TRAINING, "-o",
                          str(tmp_path / "bad")], capture_output=True, text=True)
    assert bad.returncode == 2
    assert "is not available on Atlas training series" in bad.stderr and "Traceback" not in bad.stderr


def test_cli_native_half_keeps_the_dtype(tmp_path):
    """float16 GE ops get Casts to float32 around them unless --native-half (issue E of docs/ascend.md)."""
    path = tmp_path / "half.onnx"
    onnx.save(one_node_model("UpsampleBilinear2dGrad", {"dy": (1, 2, 8, 8)}, ["dx"],
                             dict(output_size=[8, 8], input_size=[1, 2, 4, 4]), dtype="float16"), path)
    casts = {}
    for flags in ([], ["--native-half"]):
        out = tmp_path / ("native" if flags else "cast")
        result = subprocess.run([sys.executable, "-m", "resample_grad", "convert", str(path), "--target", "ascend",
                                 "--soc", A2, "-o", str(out), *flags], capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        converted = onnx.load(out / "model.ascend.onnx")
        casts[bool(flags)] = sum(n.op_type == "Cast" for n in converted.graph.node)
    assert casts == {False: 2, True: 0}
    wrong = subprocess.run([sys.executable, "-m", "resample_grad", "convert", str(path), "--target", "portable",
                            "--native-half", "-o", str(tmp_path / "p.onnx")], capture_output=True, text=True)
    assert wrong.returncode == 2 and "--native-half applies only to --target ascend" in wrong.stderr
