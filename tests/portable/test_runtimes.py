"""The portable form (opset.inline) of every example model on ONNX runtimes other than onnxruntime: OpenVINO,
tract, tinygrad and IREE (tests/portable/runtimes.py), each against the NumPy reference of the original model
(the resample_grad ops by their reference, onnx.reference for the rest).

Each runtime gets the model with the forward ops it lacks or computes wrongly replaced too (FORWARD, inline's
`forward`): docs/ops.md ("Portable form") has the reproducing models of those runtime bugs. A runtime that is not
installed is skipped, naming the package that brings it.
"""
from __future__ import annotations

import copy
import functools
import pathlib
import sys

import numpy as np
import onnx.inliner
import pytest

from resample_grad import models, opset, paths
from runtimes import RUNTIMES, missing

# forward ops each runtime lacks or gets wrong, replaced by inline(forward=...) (docs/ops.md, "Portable form")
FORWARD = {
    "openvino": ("GridSample", "Resize"),  # no 5-D GridSample; cubic antialiased Resize differs from ONNX's
    "tract": ("Resize",),  # no Resize whose scales are a run-time input
    "tinygrad": ("GridSample", "Resize"),  # no GridSample; no antialiased Resize
    "iree": ("GridSample", "Resize"),  # 2-D GridSample reads out of bounds; no 5-D one; no antialiased Resize
    "onnx2tf-tf": ("GridSample", "Resize"),  # (the one-op models have neither)
    "onnx2tf-tflite": ("GridSample", "Resize"),
}

SCATTER_FREE = ("onnx2tf-tf", "onnx2tf-tflite")  # inline(scatter_free=True): no ScatterElements 'add' there

# what onnx2tf 1.29.24 does with the portable form of each example model (docs/ops.md, "Portable form"), measured:
# every model is in one of ONNX2TF_FAILS (the models that do not convert, and what their error says: each an upstream
# bug with its minimal model in test_runtime_bugs.py) and ONNX2TF_PASSES.
# onnx2tf reads a Conv's weight only as a constant; a step's parameters are graph inputs
# (test_onnx2tf_conv_weight_from_a_graph_input_fails)
ONNX2TF_CONV_WEIGHT_INPUT = r"(?s)get_weights_constant_or_variable.*IndexError"
ONNX2TF_FAILS = {"unet_training_step": ONNX2TF_CONV_WEIGHT_INPUT}
# the separable ops: a MatMul per axis with a constant matrix (BodyKey.portable), or with scales fed at run time
# (resize_training_step) one built per axis from rank-2 tables (_resize_body._axis_matrices); the grid samplers:
# separable one-hot MatMuls (_grid_body.py); on TF and .tflite alike
ONNX2TF_PASSES = ("decoder_step", "fpn_decoder_step", "super_resolution_step", "resize_training_step",
                  "spatial_transformer_step", "registration_step",
                  "upsample_nearest_exact1d_grad", "upsample_nearest_exact2d_grad", "resize_bilinear_v2_grad",
                  "upsample_nearest2d_grad", "upsample_nearest3d_grad", "upsample_nearest_exact3d_grad",
                  "upsample_bilinear2d_grad", "upsample_trilinear3d_backward", "upsample_bicubic2d_grad",
                  "upsample_bilinear2d_aa_backward", "upsample_bicubic2d_aa_grad", "resize_nearest_neighbor_v2_grad",
                  "resize_bicubic_v2_grad", "resize_linear_grad", "resize_grad",
                  "grid_sampler_2d_grad", "grid_sampler_3d_grad")


@functools.cache
def _case(name: str):
    """The model, its example inputs and the reference outputs."""
    model = models.BUILDERS[name]()
    feeds = models.example_inputs(name, model=model)
    return model, feeds, paths.run_on(model, feeds, "reference")


@functools.cache
def _portable(name: str, runtime: str):
    """The model's portable form for the runtime: onnx2tf converts no scatter-add, so the scatter-free one there."""
    return opset.inline(_case(name)[0], forward=FORWARD[runtime], scatter_free=runtime in SCATTER_FREE)


# a model's cases on one worker: onnx2tf's conversion of a model serves its TF and .tflite cases (runtimes.py)
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xdist_group(f"model-{n}"))
                                  for n in models.BUILDERS])
@pytest.mark.parametrize("runtime", list(RUNTIMES))
def test_portable_model_matches_reference(runtime, name, tmp_path):
    _skip_if_missing(runtime)
    if runtime.startswith("onnx2tf") and name in ONNX2TF_FAILS:  # still failing: when this converts, onnx2tf has
        # changed
        with pytest.raises(RuntimeError, match=ONNX2TF_FAILS[name]):
            RUNTIMES[runtime].run(_portable(name, runtime), _case(name)[1], tmp_path)
        return
    _, feeds, reference = _case(name)
    _run_and_compare(runtime, name, _portable(name, runtime), feeds, reference, tmp_path)


def test_every_model_is_measured_on_onnx2tf():
    assert sorted([*ONNX2TF_PASSES, *ONNX2TF_FAILS]) == sorted(models.BUILDERS)


@pytest.mark.parametrize("name", ["spatial_transformer_step", "registration_step"])
def test_inlined_function_form_of_grid_steps_on_tract(name, tmp_path):
    """The function form inlined by onnx.inliner keeps the grid samplers' empty-input If: tract 0.23.9 reads a
    constant then branch whatever the condition (test_runtime_bugs.py), so the zeros are the else branch; with them
    as the then branch grad_theta was zero here (5.4e3 and 631 times the tolerance)."""
    _skip_if_missing("tract")
    model, feeds, reference = _case(name)
    inlined = onnx.inliner.inline_local_functions(opset.attach(model))
    assert "If" in {n.op_type for n in inlined.graph.node}
    _run_and_compare("tract", name, inlined, feeds, reference, tmp_path)


def _batch_symbolic(model):
    """The model with its batch dim symbolic ("N") in every input and output of rank 3 or more (and input_size's
    N -1, any), as a model exported with a dynamic batch has it: the portable form cannot fold what depends on N."""
    model = copy.deepcopy(model)
    for value in [*model.graph.input, *model.graph.output]:
        dims = value.type.tensor_type.shape.dim
        if len(dims) >= 3:
            dims[0].Clear()
            dims[0].dim_param = "N"
    for attribute in (a for node in model.graph.node for a in node.attribute if a.name == "input_size"):
        attribute.ints[0] = -1
    return model


# a one-op model with a symbolic batch that does not pass on a runtime: what its error says (docs/ops.md)
SYMBOLIC_BATCH_FAILS = {
    # ResizeGrad's plan is one vector over every axis, so with N symbolic every matrix is computed at run time: tract
    # fails evaluating a ScatterElements of it ("Undetermined symbol in expression: max(0,min(0,N+-1))")
    ("resize_grad", "tract"): "Undetermined symbol",
    # IREE 3.13's compiler on the same body: "'stream.async.fill' op has invalid Write access range"
    ("resize_grad", "iree"): "invalid Write access range",
}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xdist_group(f"model-{n}"))
                                  for n in models.ONE_OP_MODELS])
@pytest.mark.parametrize("runtime", [r for r in RUNTIMES if not r.startswith("onnx2tf")])
def test_portable_model_with_symbolic_batch(runtime, name, tmp_path):
    """The one-op models with a symbolic batch dim, run at the example's batch."""
    _skip_if_missing(runtime)
    model, feeds, reference = _case(name)
    portable = opset.inline(_batch_symbolic(model), forward=FORWARD[runtime])
    assert portable.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "N"
    fails = SYMBOLIC_BATCH_FAILS.get((name, runtime))
    if fails:  # refused: when this runs, it has changed
        with pytest.raises(Exception, match=fails):
            RUNTIMES[runtime].run(portable, feeds, tmp_path)
        return
    _run_and_compare(runtime, name, portable, feeds, reference, tmp_path)


def _skip_if_missing(runtime: str) -> None:
    reason = missing(runtime)
    if reason:
        pytest.skip(reason)


def _run_and_compare(runtime: str, name: str, model, feeds: dict, expected: dict, tmp_path) -> None:
    """The model on the runtime, each output against `expected`."""
    _compare(runtime, name, RUNTIMES[runtime].run(model, feeds, tmp_path), expected)


def _compare(runtime: str, name: str, outputs: dict, expected: dict) -> None:
    for output, value in expected.items():
        ours = np.asarray(outputs[output])
        tolerance = paths.TOLERANCE.get(ours.dtype, 0.0)  # the output's dtype's (integer outputs: exact)
        error = paths.disagreement(ours, value)
        assert error <= tolerance, f"{runtime}: {name} output {output!r}: {error:.3g} > {tolerance:g}"


def _library_step(name: str):
    """A training step of real library code exported by tests/converters/test_training_step.py (shared with its
    tests through their xdist group), and torch autograd's outputs."""
    pytest.importorskip("torch")
    converters_tests = str(pathlib.Path(__file__).parents[1] / "converters")
    if converters_tests not in sys.path:
        sys.path.insert(0, converters_tests)
    import test_training_step

    _, model, feeds, want = test_training_step.library_export(name)[:4]
    return model, feeds, want


# what onnx2tf 1.29.24 says on each library step (each a minimal model in test_runtime_bugs.py): the UNets' parameters
# are Conv weights fed as graph inputs; kornia's pyrdown / pyrup blur gradient is a ConvTranspose without kernel_shape
# (with it, onnx2tf then fails on the grouped ConvTranspose: tf.nn.conv2d_transpose refuses it)
ONNX2TF_LIBRARY_FAILS = {"monai-unet-batchnorm": ONNX2TF_CONV_WEIGHT_INPUT,
                         "monai-basicunet-bilinear": ONNX2TF_CONV_WEIGHT_INPUT,
                         "kornia-geometry": r"(?s)get_weights_constant_or_variable.*axes don't match array"}
# a step not run on a runtime, and why
LIBRARY_NOT_RUN = {
    ("monai-basicunet-bilinear", "tinygrad"):
        "passes (within 6e-6 of torch) but tinygrad takes minutes on it (docs/performance.md)",
}


def _library_params():
    for name in ("monai-unet-batchnorm", "monai-basicunet-bilinear", "kornia-geometry"):
        for runtime in RUNTIMES:
            yield pytest.param(name, runtime, marks=pytest.mark.xdist_group(f"library-{name}"), id=f"{runtime}-{name}")


@pytest.mark.parametrize("name,runtime", list(_library_params()))
def test_portable_library_step_matches_torch(runtime, name, tmp_path):
    _skip_if_missing(runtime)
    if (name, runtime) in LIBRARY_NOT_RUN:
        pytest.skip(f"{runtime}: {name} {LIBRARY_NOT_RUN[name, runtime]}")
    model, feeds, want = _library_step(name)
    portable = opset.inline(model, forward=FORWARD[runtime])
    if runtime.startswith("onnx2tf"):  # none converts on onnx2tf 1.29.24: when one does, onnx2tf has changed
        with pytest.raises(RuntimeError, match=ONNX2TF_LIBRARY_FAILS[name]):
            RUNTIMES[runtime].run(portable, feeds, tmp_path)
        return
    _compare(runtime, name, RUNTIMES[runtime].run(portable, feeds, tmp_path), want)
