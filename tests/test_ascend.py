"""Converter out: resample_grad models to Ascend ATC (GE-named ONNX, parser plugin, GE IR C++), and back."""
from __future__ import annotations

import json
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import helper

from conftest import one_node_model
from resample_grad import models, opset, runtime
from resample_grad.cli import disagreement, random_inputs, run_on
from resample_grad.converters import ascend
from resample_grad.converters.ascend_prototypes import BOOL, FLOAT, LIST_FLOAT, LIST_INT, PROTOTYPES, STRING
from resample_grad.opset import ResampleGradError

STUB = pathlib.Path(__file__).parent / "ge_stub"
ONNX_TYPE_OF = {STRING: onnx.AttributeProto.STRING, BOOL: onnx.AttributeProto.INT, FLOAT: onnx.AttributeProto.FLOAT,
                LIST_INT: onnx.AttributeProto.INTS, LIST_FLOAT: onnx.AttributeProto.FLOATS}

GS_IN = {"grad_output": (2, 3, 4, 5), "input": (2, 3, 6, 7), "grid": (2, 4, 5, 2)}
# (id, op, inputs, outputs, attributes, the GE attributes expected)
NODES = [
    *[(f"gs-{i}-{p}-{c}", "GridSampler2DGrad", GS_IN, ["grad_input", "grad_grid"],
       dict(interpolation_mode=i, padding_mode=p, align_corners=c), dict(interpolation_mode=i, padding_mode=p, align_corners=c))
      for i, p, c in [("bilinear", "zeros", 0), ("nearest", "border", 1), ("bilinear", "border", 1), ("nearest", "zeros", 0)]],
    ("gs-only-grid", "GridSampler2DGrad", GS_IN, ["", "grad_grid"], {},
     dict(interpolation_mode="bilinear", padding_mode="zeros", align_corners=0)),
    ("n2-default", "UpsampleNearestExact2dGrad", {"grad_output": (2, 3, 8, 10)}, ["grad_input"], dict(input_size=[2, 3, 4, 5]),
     dict(output_size=[8, 10], input_size=[2, 3, 4, 5], scales_h=0.0, scales_w=0.0)),
    ("n2-scales-dynamic-batch", "UpsampleNearestExact2dGrad", {"grad_output": (2, 3, 10, 9)}, ["grad_input"],
     dict(input_size=[-1, -1, 4, 6], scales_h=2.5, scales_w=1.5), dict(output_size=[10, 9], input_size=[2, 3, 4, 6], scales_h=2.5, scales_w=1.5)),
    ("n1", "UpsampleNearestExact1dGrad", {"grad_output": (2, 3, 11)}, ["grad_input"], dict(input_size=[2, 3, 5], scales=2.2),
     dict(output_size=[1, 11], input_size=[2, 3, 1, 5], scales_h=1.0, scales_w=2.2)),
    *[(f"bi-{c}-{h}", "ResizeBilinearV2Grad", {"grads": (2, 3, 8, 6), "original_image": (2, 3, 4, 5)}, ["y"],
       dict(align_corners=c, half_pixel_centers=h, scales=s), dict(align_corners=c, half_pixel_centers=h, scales=list(s)))
      for c, h, s in [(1, 0, [0.0, 0.0]), (0, 1, [2.0, 1.2]), (0, 0, [0.0, 0.0])]],
]


def _model(op_type, inputs, outputs, attrs):
    return opset.attach(one_node_model(op_type, inputs, outputs, attrs))


@pytest.mark.parametrize("case", NODES, ids=[n[0] for n in NODES])
def test_emitted_node_matches_the_prototype_table(case, tmp_path):
    _, op_type, inputs, outputs, attrs, expected = case
    conversion = ascend.to_ascend(_model(op_type, inputs, outputs, attrs), soc="Ascend910B1", out_dir=tmp_path)
    (node,) = [n for n in conversion.model.graph.node if n.domain == ascend.GE_DOMAIN]
    proto = PROTOTYPES[node.op_type]
    assert len(node.input) == len(proto.inputs) and len(node.output) == len(proto.outputs)
    assert all(node.output)  # GE always has every output
    names = [a.name for a in node.attribute]
    assert names == [a.name for a in proto.attrs if a.name in names]  # the prototype's order
    assert set(names) == set(expected)
    for attribute in node.attribute:
        ge_attr = next(a for a in proto.attrs if a.name == attribute.name)
        assert attribute.type == ONNX_TYPE_OF[ge_attr.ge_type], attribute.name
        value = helper.get_attribute_value(attribute)
        value = value.decode() if isinstance(value, bytes) else list(value) if isinstance(value, (list, tuple)) else value
        want = expected[attribute.name]
        assert value == pytest.approx(want) if isinstance(want, (float, list)) else value == want, attribute.name
    imports = {o.domain: o.version for o in conversion.model.opset_import}
    assert imports[ascend.GE_DOMAIN] == ascend.GE_VERSION and "ai.onnx" in imports
    assert all(n.domain in (ascend.GE_DOMAIN, "ai.onnx") for n in conversion.model.graph.node)
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["nodes"][0]["ge_op"] == node.op_type and all(c["ok"] for c in report["nodes"][0]["checks"])
    # the round trip runs in onnxruntime with results identical to the original
    back = ascend.from_ascend(conversion.model)
    feeds = random_inputs(back, seed=5)
    original = runtime.run(runtime.session(_model(op_type, inputs, outputs, attrs)), feeds)
    returned = runtime.run(runtime.session(back), feeds)
    wanted = [k for k, o in enumerate(outputs) if o]
    for k, ours in zip(wanted, returned):
        assert ours.tobytes() == original[wanted.index(k)].tobytes()


@pytest.mark.parametrize("name", list(models.BUILDERS))
def test_example_models_round_trip_and_compile(name, tmp_path):
    model = models.BUILDERS[name]()
    conversion = ascend.to_ascend(model, soc="Ascend910B1", out_dir=tmp_path)
    feeds = random_inputs(model, seed=6)
    back = ascend.from_ascend(onnx.load(tmp_path / "model.ascend.onnx"))
    for a, b in zip(runtime.run(runtime.session(model), feeds), runtime.run(runtime.session(back), feeds)):
        assert a.tobytes() == b.tobytes()
    for source in (tmp_path / "plugins" / "resample_grad_onnx_plugin.cc", tmp_path / "graph" / "build_graph.cc"):
        result = subprocess.run(["g++", "-std=c++17", "-fsyntax-only", "-Wall", "-Werror", f"-I{STUB}", str(source)],
                                capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
    plugin = (tmp_path / "plugins" / "resample_grad_onnx_plugin.cc").read_text()
    for ge_type in {n.op_type for n in conversion.model.graph.node if n.domain == ascend.GE_DOMAIN}:
        assert f'ge::AscendString("resample_grad.ge::1::{ge_type}")' in plugin
    atc = (tmp_path / "atc.sh").read_text()
    assert "atc --model=model.ascend.onnx --framework=5" in atc and "--soc_version=Ascend910B1" in atc


@pytest.mark.parametrize("name", list(models.BUILDERS))
def test_fallback_all_is_standard_onnx_and_runs_without_the_library(name, tmp_path):
    model = models.BUILDERS[name]()
    conversion = ascend.to_ascend(model, soc="Ascend910", out_dir=tmp_path, fallback="all")
    lowered = conversion.model
    assert not lowered.functions
    assert {o.domain for o in lowered.opset_import} <= {"", "ai.onnx"}
    assert all(n.domain in ("", "ai.onnx") for n in lowered.graph.node)
    assert max(o.version for o in lowered.opset_import) <= 18
    onnx.checker.check_model(lowered, full_check=True)
    assert not (tmp_path / "plugins").exists()  # nothing for ATC to load
    feeds = random_inputs(model, seed=7)
    ours = onnxruntime.InferenceSession(lowered.SerializeToString()).run(None, feeds)
    reference = run_on(model, feeds, "reference")
    for got, want in zip(ours, reference.values()):
        assert disagreement(got, want) <= 1e-5  # max |diff| / max(|reference|, 1): float32 sums


LIMITS = [  # (id, op, inputs, attrs, soc, text of the error)
    ("double-on-training", "ResizeBilinearV2Grad", {"grads": (1, 2, 8, 8), "original_image": (1, 2, 4, 4)}, {}, "Ascend910",
     "dtype float64 is not supported by ResizeBilinearV2Grad on Atlas training series (supported: bfloat16, float16, float32; "
     "--cast inserts Cast nodes)"),
    ("bicubic", "GridSampler2DGrad", GS_IN, dict(interpolation_mode="bicubic"), "Ascend910B2",
     "interpolation_mode 'bicubic' is not documented for GridSampler2DGrad (documented: bilinear, nearest; --wide-modes"),
    ("reflection", "GridSampler2DGrad", GS_IN, dict(padding_mode="reflection"), "Ascend910B2",
     "padding_mode 'reflection' is not documented for GridSampler2DGrad"),
    ("downscale-60x", "UpsampleNearestExact2dGrad", {"grad_output": (1, 2, 2, 4)}, dict(input_size=[1, 2, 120, 8]), "Ascend910B1",
     "downscale 120 -> 2 (60x) exceeds the device limit of 50x"),
    ("not-on-training", "UpsampleNearestExact2dGrad", {"grad_output": (1, 2, 8, 8)}, dict(input_size=[1, 2, 4, 4]), "Ascend910",
     "GE op UpsampleNearestExact2dGrad is not available on Atlas training series (it runs on Atlas A2, Atlas A3, Ascend 950)"),
    ("not-on-200i", "ResizeBilinearV2Grad", {"grads": (1, 2, 8, 8), "original_image": (1, 2, 4, 4)}, {}, "Ascend310B1",
     "GE op ResizeBilinearV2Grad is not available on Atlas 200I/500 A2"),
]


@pytest.mark.parametrize("case", LIMITS, ids=[c[0] for c in LIMITS])
def test_device_limits_are_errors_naming_the_node(case, tmp_path):
    _, op_type, inputs, attrs, soc, text = case
    dtype = "float64" if case[0] == "double-on-training" else "float32"
    outputs = ["grad_input", "grad_grid"] if op_type == "GridSampler2DGrad" else ["y"] if op_type.startswith("Resize") else ["grad_input"]
    model = opset.attach(one_node_model(op_type, inputs, outputs, attrs, dtype))
    model.graph.node[0].name = "the_node"
    with pytest.raises(ResampleGradError) as error:
        ascend.to_ascend(model, soc=soc, out_dir=tmp_path)
    assert f"node 'the_node' ({op_type}) on {soc}: {text}" in str(error.value)
    # --fallback node: the node becomes its standard-ONNX body, and the model still runs
    conversion = ascend.to_ascend(model, soc=soc, out_dir=tmp_path / "fallback", fallback="node")
    assert conversion.nodes[0].action.startswith("fallback: ")
    assert not any(n.domain in (opset.DOMAIN, ascend.GE_DOMAIN) for n in conversion.model.graph.node)
    feeds = random_inputs(model, seed=8)
    got = onnxruntime.InferenceSession(conversion.model.SerializeToString()).run(None, feeds)
    for a, b in zip(got, run_on(model, feeds, "reference").values()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)  # float32 results


def test_cast_wraps_an_unsupported_dtype(tmp_path):
    model = opset.attach(one_node_model("GridSampler2DGrad", GS_IN, ["grad_input", "grad_grid"], {}, "float64"))
    conversion = ascend.to_ascend(model, soc="Ascend910", out_dir=tmp_path, cast=True)
    casts = [n for n in conversion.model.graph.node if n.op_type == "Cast"]
    assert len(casts) == 5  # three inputs to float32, two outputs back to double
    assert conversion.nodes[0].action == "converted with Cast"
    assert "--cast: Cast to float32 around the op" in json.dumps(json.loads((tmp_path / "report.json").read_text()))
    back = ascend.from_ascend(conversion.model)
    feeds = random_inputs(model, seed=9)
    for a, b in zip(runtime.run(runtime.session(back), feeds), run_on(model, feeds, "reference").values()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)  # float32 inside: float32 accuracy
    result = subprocess.run(["g++", "-std=c++17", "-fsyntax-only", f"-I{STUB}", str(tmp_path / "graph" / "build_graph.cc")],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_wide_modes_accept_bicubic_and_reflection(tmp_path):
    model = opset.attach(one_node_model("GridSampler2DGrad", GS_IN, ["grad_input", "grad_grid"],
                                        dict(interpolation_mode="bicubic", padding_mode="reflection")))
    conversion = ascend.to_ascend(model, soc="Ascend910B1", out_dir=tmp_path, wide_modes=True)
    (node,) = [n for n in conversion.model.graph.node if n.domain == ascend.GE_DOMAIN]
    assert helper.get_attribute_value(node.attribute[0]) == b"bicubic"


def test_unknown_soc_lists_the_known_ones():
    with pytest.raises(ResampleGradError, match="unknown --soc 'Ascend999'; known: Atlas training series: Ascend910"):
        ascend.to_ascend(models.decoder_step(), soc="Ascend999")


def test_cli_convert(tmp_path):
    path = tmp_path / "decoder.onnx"
    onnx.save(models.decoder_step(), path)
    result = subprocess.run([sys.executable, "-m", "resample_grad", "convert", str(path), "--target", "ascend", "--soc",
                             "Ascend910B1", "-o", str(tmp_path / "out")], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "nearest_backward (UpsampleNearestExact2dGrad) -> UpsampleNearestExact2dGrad: converted" in result.stdout
    assert (tmp_path / "out" / "model.ascend.onnx").is_file()
    bad = subprocess.run([sys.executable, "-m", "resample_grad", "convert", str(path), "--soc", "Ascend910", "-o",
                          str(tmp_path / "bad")], capture_output=True, text=True)
    assert bad.returncode == 2
    assert "is not available on Atlas training series" in bad.stderr and "Traceback" not in bad.stderr
