"""The generated ATC parser plugin, compiled and run on what ATC's ONNX parser hands it.

ATC's parser (hicann/ge parser/parser/onnx/onnx_parser.cc) sets each node's op_type to
"<domain>::<opset version>::<op type>" (ConstructOriType, from the model's opset_import), looks the
plugin up by it and calls its ParseParamsFn with the node's `ge::onnx::NodeProto`. Here the NodeProto
is the real one: tests/ge_stub/onnx/proto/ge_onnx.proto is CANN's file, compiled with protoc, fed the
serialized nodes of every converted model of the demo and of the converter's test table. The plugin
is linked with a recording `ge::Operator` (tests/ge_stub/recording.cc, behind the stub headers that
tests/converters/test_ge_stub.py checks against CANN's), and run_plugin.cc prints what it set. Every GE attribute
must equal the ONNX node's value bit for bit; a missing required attribute, an unknown one, one of the
wrong ONNX type and a bool other than 0 or 1 must be refused with a message naming the node and the
attribute.
"""
from __future__ import annotations

import concurrent.futures
import hashlib
import json
import pathlib
import shutil
import struct
import subprocess

import onnx
import pytest
from onnx import helper

from conftest import GE_STUB as STUB
from conftest import ge_onnx_pb, ge_stub_includes
from resample_grad import models
from resample_grad.converters import ascend, ascend_cpp
from resample_grad.converters.ascend_prototypes import ALL_PROTOTYPES as PROTOTYPES
from resample_grad.converters.ascend_prototypes import BOOL, FLOAT, INT, LIST_FLOAT, LIST_INT, STRING
from test_ascend import A2, EXAMPLE_SOC, NODES, REFUSED, _model

# hicann/metadef inc/external/graph/c_types.h C_FORMAT_*
FORMATS = {"NCHW": 0, "NHWC": 1, "ND": 2, "NDHWC": 27, "NCDHW": 30}
ONNX_KIND = {STRING: onnx.AttributeProto.STRING, BOOL: onnx.AttributeProto.INT, INT: onnx.AttributeProto.INT,
             FLOAT: onnx.AttributeProto.FLOAT, LIST_INT: onnx.AttributeProto.INTS,
             LIST_FLOAT: onnx.AttributeProto.FLOATS}
TOOLS = [t for t in ("g++", "protoc") if shutil.which(t) is None]
pytestmark = [
    pytest.mark.xdist_group("ascend_plugin"),  # one worker compiles the harness once
    pytest.mark.skipif(bool(TOOLS), reason=f"needs {' and '.join(TOOLS)} (Debian: g++, protobuf-compiler, "
                                           "libprotobuf-dev; .ci/run installs them)"),
]
CXX = ["g++", "-std=c++17", "-O0", "-Wall", "-Wextra", "-Werror"]


class Harness:
    """run_plugin built against one plugin source; objects shared by every plugin."""

    def __init__(self, build: pathlib.Path):
        self.build = build
        self.include = list(ge_stub_includes())
        units = [(ge_onnx_pb() / "onnx/proto/ge_onnx.pb.cc", False), (STUB / "recording.cc", True),
                 (STUB / "run_plugin.cc", True)]
        self.objects = list(concurrent.futures.ThreadPoolExecutor(2).map(lambda u: self._compile(*u), units))
        self.binaries = {}

    def _compile(self, source: pathlib.Path, strict) -> pathlib.Path:
        out = self.build / (source.name + ".o")
        flags = CXX if strict else ["g++", "-std=c++17", "-O0"]  # protoc's generated code: not ours to lint
        result = subprocess.run([*flags, *self.include, "-c", str(source), "-o", str(out)], capture_output=True,
                                text=True)
        assert result.returncode == 0, f"{source}:\n{result.stderr}"
        return out

    def binary(self, plugin: str) -> pathlib.Path:
        """run_plugin linked with this plugin source (compiled once per distinct source)."""
        digest = hashlib.sha256(plugin.encode()).hexdigest()[:16]
        if digest not in self.binaries:
            source = self.build / f"plugin_{digest}.cc"
            source.write_text(plugin)
            exe = self.build / f"run_plugin_{digest}"
            result = subprocess.run([*CXX, *self.include, str(source), *map(str, self.objects), "-lprotobuf", "-o",
                                     str(exe)], capture_output=True, text=True)
            assert result.returncode == 0, result.stderr
            self.binaries[digest] = exe
        return self.binaries[digest]

    def run(self, plugin: str, model: onnx.ModelProto, nodes=None):
        """(registrations, {node name: record}, stderr) for the GE nodes of a converted model, each given to
        the plugin as the parser gives it."""
        requests = self.build / "requests.tsv"
        lines = []
        for node in nodes if nodes is not None else ge_nodes(model):
            proto = PROTOTYPES[_ge_type(node)]
            parsed = onnx.NodeProto()
            parsed.CopyFrom(node)
            parsed.op_type = origin_key(model, node)  # OnnxModelParser::ParseAllNodeProto: set_op_type(ori_type)
            lines.append(f"{','.join(proto.inputs)}\t{','.join(proto.outputs)}\t{parsed.SerializeToString().hex()}")
        requests.write_text("\n".join(lines) + "\n")
        result = subprocess.run([str(self.binary(plugin)), str(requests)], capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
        records = [json.loads(line) for line in result.stdout.splitlines()]
        registrations = [r for r in records if "registration" in r]
        return registrations, {r["node"]: r for r in records if "node" in r}, result.stderr


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    return Harness(tmp_path_factory.mktemp("plugin_harness"))


def ge_nodes(model):
    return [n for n in model.graph.node if n.domain == ascend.GE_DOMAIN]


def _ge_type(node) -> str:
    return node.op_type.rsplit("::", 1)[-1]


def origin_key(model, node) -> str:
    """OnnxModelParser::ConstructOriType: domain (empty: ai.onnx) :: the model's opset version of it :: op_type."""
    domain = node.domain or "ai.onnx"
    version = next(o.version for o in model.opset_import if o.domain == domain)
    return f"{domain}::{version}::{node.op_type}"


def _bits(value: float) -> str:
    return struct.pack("<f", value)[::-1].hex()  # big-endian hex of the float32, as run_plugin prints it


def expected_attrs(node):
    """[name, GE setter type, value] per ONNX attribute of a GE node, in the node's order, values exact."""
    out = []
    for a in node.attribute:
        kind = PROTOTYPES[node.op_type].attr(a.name).ge_type
        if kind == STRING:
            out.append([a.name, "String", a.s.decode()])
        elif kind == BOOL:
            out.append([a.name, "Bool", a.i])
        elif kind == INT:
            out.append([a.name, "Int", a.i])
        elif kind == FLOAT:
            out.append([a.name, "Float", _bits(a.f)])
        elif kind == LIST_INT:
            out.append([a.name, "ListInt", list(a.ints)])
        else:
            out.append([a.name, "ListFloat", [_bits(v) for v in a.floats]])
    return out


def expected_formats(ge_type):
    proto = PROTOTYPES[ge_type]
    return [[port, port in proto.inputs, *[FORMATS[proto.port_format(port)]] * 2]
            for port in proto.inputs + proto.outputs]


def _converted(tmp_path, model, soc):
    conversion = ascend.to_ascend(model, soc=soc, out_dir=tmp_path)
    plugin = tmp_path / "plugins" / ascend_cpp.PLUGIN_FILE
    return conversion.model, plugin.read_text() if plugin.exists() else None


def check_every_node(harness, model, plugin):
    registrations, records, stderr = harness.run(plugin, model)
    used = {n.op_type for n in ge_nodes(model)}
    assert sorted(r["registration"] for r in registrations) == sorted(used)
    for r in registrations:  # FrameworkType(ONNX), the parser's key, ParseParamsFn, ImplyType::TVM
        assert (r["framework"], r["origin_op_types"], r["parse_params_fn"], r["by_operator_fn"], r["imply_type"]) \
            == (5, [f"{ascend.GE_DOMAIN}::{ascend.GE_VERSION}::{r['registration']}"], True, False, 1), r
    assert stderr == ""
    for node in ge_nodes(model):
        record = records[node.name]
        assert record["status"] == "SUCCESS" and record["om_type"] == node.op_type, record
        assert record["attrs"] == expected_attrs(node), node.name
        assert record["formats"] == expected_formats(node.op_type), node.name
        # every attribute the GE op requires reached it
        assert {a.name for a in PROTOTYPES[node.op_type].attrs if a.required} <= {a[0] for a in record["attrs"]}


EXAMPLES = [name for name in models.BUILDERS if name not in REFUSED]


def test_every_example_model_through_its_own_plugin(harness, tmp_path):
    """Each demo model's plugin, run on that model's serialized nodes: every attribute arrives exactly."""
    checked = 0
    for name in EXAMPLES:
        model, plugin = _converted(tmp_path / name, models.BUILDERS[name](), EXAMPLE_SOC.get(name, A2))
        if ge_nodes(model):
            check_every_node(harness, model, plugin)
            checked += 1
    assert checked >= 15


@pytest.mark.parametrize("case", NODES, ids=[n[0] for n in NODES])
def test_every_table_node_through_the_plugin(harness, case, tmp_path):
    _, op_type, inputs, outputs, attrs, soc, *_ = case
    model, plugin = _converted(tmp_path, _model(op_type, inputs, outputs, attrs), soc)
    check_every_node(harness, model, plugin)


def test_a_third_arrives_with_all_its_bits(harness, tmp_path):
    """A scale of 1/3: the JSON route's "%g" would give 0.333333; the NodeProto route keeps 0x3eaaaaab."""
    model, plugin = _converted(tmp_path, _model("UpsampleNearestExact2dGrad", {"grad_output": (1, 1, 3, 4)},
                                                ["grad_input"], dict(input_size=[1, 1, 9, 12], scales_h=1 / 3,
                                                                     scales_w=1 / 3)), A2)
    _, records, _ = harness.run(plugin, model)
    (record,) = records.values()
    assert ["scales_h", "Float", "3eaaaaab"] in record["attrs"] and ["scales_w", "Float", "3eaaaaab"] in record["attrs"]


def _all_ops_model(tmp_path):
    """One converted model per GE op of the table (the first node of each), and one plugin for all of them."""
    seen, nodes = set(), []
    for k, (_, op_type, inputs, outputs, attrs, soc, ge_op, *_) in enumerate(NODES):
        if ge_op in seen:
            continue
        seen.add(ge_op)
        model, _ = _converted(tmp_path / str(k), _model(op_type, inputs, outputs, attrs), soc)
        nodes += [(model, n) for n in ge_nodes(model) if n.op_type == ge_op]
    plugin = ascend_cpp.plugin_source(sorted(seen))
    return nodes, plugin


def _refusal(harness, plugin, model, node):
    _, records, stderr = harness.run(plugin, model, nodes=[node])
    return records[node.name]["status"], stderr


def test_a_missing_required_attribute_is_refused(harness, tmp_path):
    nodes, plugin = _all_ops_model(tmp_path)
    refused = 0
    for model, node in nodes:
        for attr in PROTOTYPES[node.op_type].attrs:
            if not attr.required:
                continue
            broken = onnx.NodeProto()
            broken.CopyFrom(node)
            broken.name = f"{node.name or node.op_type}_without_{attr.name}"
            kept = [a for a in node.attribute if a.name != attr.name]
            del broken.attribute[:]
            broken.attribute.extend(kept)
            status, stderr = _refusal(harness, plugin, model, broken)
            assert status == "FAILED"
            assert f"node '{broken.name}' ({node.op_type}): required attribute '{attr.name}' is missing" in stderr
            refused += 1
    assert refused >= 12  # every REQUIRED_ATTR of the table


def test_an_unknown_a_mistyped_and_a_non_bool_attribute_are_refused(harness, tmp_path):
    nodes, plugin = _all_ops_model(tmp_path)
    model, node = next((m, n) for m, n in nodes if n.op_type == "ResizeBilinearV2Grad")
    cases = [
        (helper.make_attribute("antialias", 1), "unknown attribute 'antialias'; ResizeBilinearV2Grad has "
                                                 "align_corners, half_pixel_centers, scales"),
        (helper.make_attribute("align_corners", 1.0), "attribute 'align_corners' must be INT (0 or 1), got ONNX "
                                                       "attribute type 1"),
        (helper.make_attribute("align_corners", 2), "attribute 'align_corners' must be 0 or 1, got 2"),
        (helper.make_attribute("scales", [1, 2]), "attribute 'scales' must be FLOATS, got ONNX attribute type 7"),
    ]
    for k, (attribute, message) in enumerate(cases):
        broken = onnx.NodeProto()
        broken.CopyFrom(node)
        broken.name = f"broken_{k}"
        kept = [a for a in node.attribute if a.name != attribute.name]
        del broken.attribute[:]
        broken.attribute.extend(kept + [attribute])
        status, stderr = _refusal(harness, plugin, model, broken)
        assert status == "FAILED"
        assert f"node 'broken_{k}' (ResizeBilinearV2Grad): {message}" in stderr


def test_the_plugin_and_the_table_agree_on_every_ge_op(harness, tmp_path):
    """The all-ops plugin registers each of the 21 GE ops (16 gradient, 5 forward) under the parser's key, with a
    ParseParamsFn."""
    plugin = ascend_cpp.plugin_source(sorted(PROTOTYPES))
    model = helper.make_model(helper.make_graph([], "empty", [], []),
                              opset_imports=[helper.make_opsetid(ascend.GE_DOMAIN, ascend.GE_VERSION)])
    registrations, _, _ = harness.run(plugin, model, nodes=[])
    assert sorted(r["registration"] for r in registrations) == sorted(PROTOTYPES) and len(PROTOTYPES) == 21
