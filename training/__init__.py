"""Training with onnxruntime, two ways.

Trainer (trainer.py), on plain onnxruntime (any build, every Python the package supports): runs a step model that
holds its optimizer's update (converters.export_training_step(..., optimizer=...)) step after step, the state kept
in onnxruntime; checkpoints in safetensors; the trained forward as an inference model. It needs no
onnxruntime-training (docs/training.md):

    trainer = training.Trainer("step.onnx"); loss = trainer.step(x, target); trainer.save("ckpt.safetensors")

onnxruntime-training's API (Module, Optimizer; 1.19.2, its last release, Python <= 3.11) for models with
GridSample, AffineGrid and Resize:

    from resample_grad import training
    from resample_grad.training import artifacts, api    # onnxruntime.training's, imported without torch

    training.generate_artifacts(model, requires_grad=[...], loss=artifacts.LossType.MSELoss,
                                optimizer=artifacts.OptimType.SGD, artifact_directory="out")
    state = api.CheckpointState.load_checkpoint("out/checkpoint")
    module = api.Module("out/training_model.onnx", state, "out/eval_model.onnx", device="cpu",
                        session_options=training.session_options())
    optimizer = api.Optimizer("out/optimizer_model.onnx", module)

What it adds to onnxruntime-training (1.19.2, the last release, CPU):
- GridSample (4-D and 5-D, every mode and padding, align_corners) and AffineGrid get gradients: onnxruntime's
  builder has none ("The gradient builder has not been registered: GridSample"). GridSample's is this package's
  GridSampler2DGrad / GridSampler3DGrad (libresample_grad_ops), AffineGrid's is standard ONNX.
- Resize's gradient, com.microsoft::ResizeGrad, which the builder emits but onnxruntime has only CUDA and ROCm
  kernels for ("Could not find an implementation for ResizeGrad(1)"), gets a CPU kernel
  (libresample_grad_training_ops), on this package's ResizeGrad engine.

Works with onnxruntime-training alone (no torch: see _ort.py), numpy and onnx 1.16 or newer; it imports
neither resample_grad.opset (which needs onnx >= 1.20) nor torch.
"""
from __future__ import annotations

import functools
import os
import pathlib

import onnx

from resample_grad import _ort_probe, runtime
from resample_grad.constants import DEFAULT_DOMAINS, MICROSOFT_DOMAIN

from . import _gradients, _ort
from ._ort import INSTALL_HINT, TrainingUnavailable
from .trainer import Trainer

__all__ = ["Trainer", "generate_artifacts", "session_options", "available", "TrainingUnavailable", "INSTALL_HINT",
           "artifacts", "api"]

_ARTIFACTS = ("training", "eval", "optimizer")


def available() -> bool:
    """True when onnxruntime-training (its Python API and gradient registry) is installed."""
    try:
        _ort.training()
    except ImportError:
        return False
    return True


def __getattr__(name):  # resample_grad.training.artifacts / .api: onnxruntime.training's, without torch
    if name in ("artifacts", "api"):
        artifacts, api = _ort.training()
        return artifacts if name == "artifacts" else api
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def session_options(options=None, threads: int = 0):
    """onnxruntime SessionOptions (the given ones, or new) with both libraries registered: libresample_grad_ops
    (GridSampler2DGrad / 3DGrad) and libresample_grad_training_ops (com.microsoft::ResizeGrad); for
    onnxruntime.training.api.Module, whose sessions the Optimizer shares. threads > 0 sets intra_op_num_threads.

    Only for the artifacts of generate_artifacts: the second library makes onnxruntime refuse models that do not
    import com.microsoft (see runtime.training_library_path); infer with runtime.session_options() instead."""
    ort = _ort.onnxruntime()
    options = options or ort.SessionOptions()
    if threads:
        options.intra_op_num_threads = threads
    options.register_custom_ops_library(runtime.library_path())
    options.register_custom_ops_library(runtime.training_library_path())
    return options


def generate_artifacts(
    model: onnx.ModelProto | str | os.PathLike,
    requires_grad: list[str] | None = None,
    frozen_params: list[str] | None = None,
    loss=None,
    optimizer=None,
    artifact_directory: str | bytes | os.PathLike | None = None,
    prefix: str = "",
    ort_format: bool = False,
    custom_op_library: str | bytes | os.PathLike | None = None,
    additional_output_names: list[str] | None = None,
    nominal_checkpoint: bool = False,
    loss_input_names: list[str] | None = None,
) -> None:
    """onnxruntime.training.artifacts.generate_artifacts (same arguments, same files) for models with GridSample,
    AffineGrid and Resize; the artifacts run in an api.Module created with session_options().

    Steps: register the gradient definitions of GridSample and AffineGrid (once per process); give every node a
    unique name; call onnxruntime-training's generate_artifacts with libresample_grad_ops as its custom-op
    library and ort_format=False; give each gradient node its forward node's attributes (GridSampler3DGrad for
    5-D); add a com.microsoft opset import to the artifacts that lack one; lower their IR version to what the
    installed onnxruntime reads (onnx >= 1.17 writes newer ones than onnxruntime 1.19 loads); then convert to ORT
    format when asked (with both libraries registered).

    custom_op_library: onnxruntime-training takes one library. A model with GridSample needs this package's
    (given or not); a model without one may name its own. The artifact directory is created when missing."""
    artifacts, _ = _ort.training()
    _gradients.register_once()
    if isinstance(model, onnx.ModelProto):
        forward = onnx.ModelProto()
        forward.CopyFrom(model)
    elif isinstance(model, (str, os.PathLike)):
        forward = onnx.load(os.fspath(model))
    else:
        raise TypeError(f"resample_grad.training.generate_artifacts: model must be an onnx.ModelProto or a path, "
                        f"got {type(model).__name__}")
    _gradients.name_nodes(forward)
    has_grid_sample = any(n.op_type == "GridSample" and n.domain in DEFAULT_DOMAINS for n in forward.graph.node)
    library = runtime.library_path()
    if custom_op_library is not None and os.path.realpath(os.fsdecode(custom_op_library)) != os.path.realpath(library):
        if has_grid_sample:
            raise ValueError(
                f"resample_grad.training.generate_artifacts: custom_op_library={os.fsdecode(custom_op_library)!r}, "
                "but onnxruntime-training's generate_artifacts takes one custom-op library and this model's GridSample "
                f"gradients need resample_grad's ({library}); leave custom_op_library out")
        library = os.fsdecode(custom_op_library)
    ranks = _gradients.spatial_ranks(forward) if has_grid_sample else {}
    out = pathlib.Path(os.fsdecode(artifact_directory) if artifact_directory is not None else os.getcwd())
    out.mkdir(parents=True, exist_ok=True)
    artifacts.generate_artifacts(
        forward, requires_grad=requires_grad, frozen_params=frozen_params, loss=loss, optimizer=optimizer,
        artifact_directory=out, prefix=prefix, ort_format=False, custom_op_library=library,
        additional_output_names=additional_output_names, nominal_checkpoint=nominal_checkpoint,
        loss_input_names=loss_input_names)
    max_ir = _max_ir_version()
    paths = [out / f"{prefix}{kind}_model.onnx" for kind in _ARTIFACTS]
    for kind, path in zip(_ARTIFACTS, paths, strict=True):
        if not path.exists():
            continue  # no optimizer asked for
        artifact = onnx.load(str(path))
        if kind == "training":
            _gradients.fix_attributes(artifact, forward, ranks)
        if not any(o.domain == MICROSOFT_DOMAIN for o in artifact.opset_import):
            artifact.opset_import.append(onnx.helper.make_opsetid(MICROSOFT_DOMAIN, 1))
        artifact.ir_version = min(artifact.ir_version, max_ir)
        onnx.save(artifact, str(path))
    if ort_format:
        for path in paths:
            if path.exists():
                _to_ort_format(path)


@functools.cache
def _max_ir_version() -> int:
    """The newest IR version the installed onnxruntime loads (probed once)."""
    return _ort_probe.max_ir_version(_ort.onnxruntime())


def _to_ort_format(path: pathlib.Path) -> None:
    """path.onnx -> path.ort as onnxruntime's convert_onnx_models_to_ort does for generate_artifacts (the Fixed
    style, its optimization level), with both libraries registered (its tool registers one)."""
    ort = _ort.onnxruntime()
    from onnxruntime.tools.onnx_model_utils import get_optimization_level

    level = get_optimization_level(os.getenv("ORT_CONVERT_ONNX_MODELS_TO_ORT_OPTIMIZATION_LEVEL", "all"))
    options = session_options()
    options.optimized_model_filepath = str(path.with_suffix(".ort"))
    options.graph_optimization_level = level
    options.add_session_config_entry("session.save_model_format", "ORT")
    disabled = ["NchwcTransformer"] if level == ort.GraphOptimizationLevel.ORT_ENABLE_ALL else None
    ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"],
                         disabled_optimizers=disabled)
