"""The portable form of the grid samplers (opset.inline: SeparableTaps in opset/_grid_body.py) and of the forward
GridSample (inline(forward=("GridSample",))) in every mode, padding and align_corners, 4-D and 5-D, on onnxruntime
and on each runtime of tests/portable/runtimes.py: one model per rank holding every configuration (one conversion per
runtime), against the NumPy reference of GridSampler{2,3}DGrad and onnxruntime's GridSample (onnx.reference's
differs in bicubic border padding). The one-op models of test_runtimes.py each hold one configuration only."""
from __future__ import annotations

import copy
import functools
import itertools

import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

from resample_grad import opset, paths
from runtimes import RUNTIMES, missing

F = TensorProto.FLOAT
SIZES = {2: [5, 6], 3: [4, 5, 6]}  # the image's spatial sizes
POINTS = {2: [4, 3], 3: [3, 2, 3]}  # the grid's
CONFIGS = {spatial: list(itertools.product(modes, ["zeros", "border", "reflection"], [0, 1]))
           for spatial, modes in ((2, ["bilinear", "nearest", "bicubic"]), (3, ["bilinear", "nearest"]))}
ONNX_MODES = {"bilinear": "linear", "nearest": "nearest", "bicubic": "cubic"}  # GridSample's (opset 20)


@functools.cache
def _case(spatial: int):
    """The model (each configuration k: GridSampler{2,3}DGrad -> dx_k, dgrid_k and GridSample -> y_k), its inputs
    and the reference outputs."""
    n, c = 2, 3
    op_type = "GridSampler2DGrad" if spatial == 2 else "GridSampler3DGrad"
    nodes, outputs = [], []
    for k, (mode, padding, align_corners) in enumerate(CONFIGS[spatial]):
        nodes.append(helper.make_node(op_type, ["grad", "x", "grid"], [f"dx_{k}", f"dgrid_{k}"], domain="resample_grad",
                                      interpolation_mode=mode, padding_mode=padding, align_corners=align_corners))
        nodes.append(helper.make_node("GridSample", ["x", "grid"], [f"y_{k}"], mode=ONNX_MODES[mode],
                                      padding_mode=padding, align_corners=align_corners))
        outputs += [(f"dx_{k}", [n, c, *SIZES[spatial]]), (f"dgrid_{k}", [n, *POINTS[spatial], spatial]),
                    (f"y_{k}", [n, c, *POINTS[spatial]])]
    inputs = {"grad": [n, c, *POINTS[spatial]], "x": [n, c, *SIZES[spatial]], "grid": [n, *POINTS[spatial], spatial]}
    graph = helper.make_graph(nodes, f"grid{spatial}d", [helper.make_tensor_value_info(k, F, v) for k, v in
                                                         inputs.items()],
                              [helper.make_tensor_value_info(k, F, v) for k, v in outputs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20),
                                                    helper.make_opsetid("resample_grad", 2)])
    rng = np.random.default_rng(spatial)
    feeds = {"grad": rng.standard_normal(inputs["grad"]), "x": rng.standard_normal(inputs["x"]),
             # mostly inside, some points outside (reflection folds them back), a few exactly on the corners
             "grid": rng.uniform(-1.6, 1.6, inputs["grid"])}
    feeds["grid"].reshape(-1)[:4] = [-1.0, 1.0, 0.0, 1.0]
    feeds = {k: v.astype(np.float32) for k, v in feeds.items()}
    reference = paths.run_on(_part(model, "d"), feeds, "reference")
    forward = onnxruntime.InferenceSession(_part(model, "y").SerializeToString(), providers=["CPUExecutionProvider"])
    names = [f"y_{k}" for k in range(len(CONFIGS[spatial]))]
    reference.update(zip(names, forward.run(names, {k: feeds[k] for k in ("x", "grid")}), strict=True))
    return model, feeds, reference


def _part(model, prefix: str):
    """The model's nodes writing the outputs named `prefix`_k, with the inputs they read."""
    nodes = [n for n in model.graph.node if n.output[0].startswith(prefix)]
    read = {name for n in nodes for name in n.input}
    graph = helper.make_graph(nodes, prefix, [i for i in model.graph.input if i.name in read],
                              [o for o in model.graph.output if o.name.startswith(prefix)])
    return helper.make_model(graph, opset_imports=[o for o in model.opset_import if o.domain == "" or prefix == "d"])


@functools.cache
def _portable(spatial: int, scatter_free: bool):
    return opset.inline(_case(spatial)[0], forward=("GridSample",), scatter_free=scatter_free)


def _compare(outputs: dict, reference: dict, spatial: int, where: str) -> None:
    """Each output within 1e-4 of max(|reference|, 1) (paths.TOLERANCE of float32); a failure names the
    configurations."""
    errors = {name: paths.disagreement(outputs[name], value) for name, value in reference.items()}
    bad = [f"{name} {CONFIGS[spatial][int(name.split('_')[1])]}: {error:.3g}" for name, error in errors.items()
           if not error <= paths.TOLERANCE[np.dtype(np.float32)]]
    assert not bad, f"{where}: " + "; ".join(bad)


@pytest.mark.parametrize("scatter_free", [False, True])
@pytest.mark.parametrize("spatial", [2, 3])
def test_portable_grid_bodies_on_onnxruntime(spatial, scatter_free):
    model, feeds, reference = _case(spatial)
    portable = _portable(spatial, scatter_free)
    ops = {n.op_type for n in portable.graph.node}
    assert "GridSample" not in ops
    assert bool({"ScatterElements", "ScatterND", "GatherElements"} & ops) != scatter_free
    session = onnxruntime.InferenceSession(portable.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in portable.graph.output]
    _compare(dict(zip(names, session.run(None, feeds), strict=True)), reference, spatial, "onnxruntime")


# onnx2tf 1.29.24 converts no ScatterElements 'add' (docs/ops.md): the scatter-free form only; tract 0.23.9 on the
# 3-D model in the default form allocates more than 6 GB and aborts the process (docs/ops.md): not run
NOT_RUN = {("tract", 3, False)}
FORMS = [(runtime, spatial, scatter_free)
         for runtime in RUNTIMES for spatial in (2, 3) for scatter_free in (False, True)
         if (scatter_free or not runtime.startswith("onnx2tf")) and (runtime, spatial, scatter_free) not in NOT_RUN]


@pytest.mark.parametrize("runtime, spatial, scatter_free", FORMS)
def test_portable_grid_bodies_on_runtime(runtime, spatial, scatter_free, tmp_path):
    reason = missing(runtime)
    if reason:
        pytest.skip(reason)
    _, feeds, reference = _case(spatial)
    portable = _portable(spatial, scatter_free)
    if runtime.startswith("onnx2tf"):
        # nearest's grad_grid is zeros, an initializer in the portable form: onnx2tf 1.29.24 leaves a constant output
        # out of the converted model (a KeyError, not a wrong number); checked here, the model's other outputs there
        portable, reference = copy.deepcopy(portable), dict(reference)
        constants = {t.name: numpy_helper.to_array(t) for t in portable.graph.initializer}
        for output in [o for o in portable.graph.output if o.name in constants]:
            np.testing.assert_array_equal(constants[output.name], reference.pop(output.name))
            portable.graph.output.remove(output)
    _compare(RUNTIMES[runtime].run(portable, feeds, tmp_path), reference, spatial, runtime)
