"""onnxruntime-training's Python API, imported without torch.

onnxruntime-training's onnxruntime/training/__init__.py (1.19.2) imports its .amp and .optim modules, which
import torch; artifacts (the gradient builder's front end) and api (Module, Optimizer, CheckpointState) need
no torch. When the package's __init__ fails for want of torch, a bare package object stands in for
onnxruntime.training (its __path__ the installed training directory), so its submodules import without
running that __init__; later imports of onnxruntime.training.api or .artifacts, the user's included, use it.
"""
from __future__ import annotations

import os
import sys
import types

INSTALL_HINT = ('pip install onnxruntime-training-cpu==1.19.2 "numpy<2" in an environment of its own, then '
                'pip install resample-grad there, without the runtime extra (docs/training.md)')


class TrainingUnavailable(ImportError):
    """onnxruntime-training is not installed (plain onnxruntime, or no onnxruntime at all)."""


def onnxruntime():
    """The onnxruntime module, or TrainingUnavailable saying how to get onnxruntime-training."""
    try:
        import onnxruntime as module
    except ImportError as error:
        raise TrainingUnavailable(f"resample_grad.training needs onnxruntime-training, and no onnxruntime is "
                                  f"installed: {INSTALL_HINT}") from error
    return module


def capi():
    """onnxruntime's binding, checked for the training API (register_gradient_definition)."""
    ort = onnxruntime()
    from onnxruntime.capi import _pybind_state as binding

    if not hasattr(binding, "register_gradient_definition") or not os.path.isdir(_training_dir(ort)):
        raise TrainingUnavailable(
            f"resample_grad.training needs onnxruntime-training; the installed onnxruntime {ort.__version__} "
            f"({os.path.dirname(ort.__file__)}) has no training API: {INSTALL_HINT}")
    return binding


def _training_dir(ort) -> str:
    return os.path.join(os.path.dirname(ort.__file__), "training")


def training():
    """(onnxruntime.training.artifacts, onnxruntime.training.api), imported without torch when torch is absent."""
    capi()
    try:
        from onnxruntime.training import api, artifacts
        return artifacts, api
    except ModuleNotFoundError as error:
        if error.name != "torch" and not (error.name or "").startswith("torch."):
            raise
    import onnxruntime as ort

    for name in [k for k in sys.modules if k == "onnxruntime.training" or k.startswith("onnxruntime.training.")]:
        del sys.modules[name]  # the half-imported package and whatever it got to
    package = types.ModuleType("onnxruntime.training")
    package.__path__ = [_training_dir(ort)]
    package.__package__ = "onnxruntime.training"
    package.__file__ = os.path.join(package.__path__[0], "__init__.py")
    sys.modules["onnxruntime.training"] = package
    ort.training = package
    from onnxruntime.training import api, artifacts

    package.api, package.artifacts = api, artifacts
    return artifacts, api
