"""The native onnxruntime custom-op library of the resample_grad domain.

    so = onnxruntime.SessionOptions()
    so.register_custom_ops_library(resample_grad.runtime.library_path())

A kernel registered for a custom domain takes precedence over a model-local
function of the same name, so a model made by resample_grad.opset.attach()
runs on these kernels when the library is registered and on its function
bodies when it is not.

training_library_path() is a second library, for onnxruntime-training's CPU
training sessions only: com.microsoft::ResizeGrad (see resample_grad.training).

onnxruntime itself is the `runtime` extra (pip install "resample-grad[runtime]"),
so that the package installs beside onnxruntime-training, whose Python module is
also `onnxruntime`; require_onnxruntime() says so when neither is installed.
"""
from __future__ import annotations

import importlib.resources
import os
import pathlib
import sys

_SUFFIX = {"darwin": ".dylib", "win32": ".dll"}.get(sys.platform, ".so")


def _installed_library(stem: str, variable: str) -> str:
    """The library file `stem` installed beside this module, unless the environment variable names another."""
    override = os.environ.get(variable)
    if override:
        return override
    # importlib.resources finds the library in a regular and in an editable install alike
    path = pathlib.Path(str(importlib.resources.files(__name__) / (stem + _SUFFIX)))
    if not path.exists():
        raise FileNotFoundError(
            f"resample_grad: the native library {path} is missing; reinstall the package with "
            "`pip install .` so that its C++ kernels are built")
    return str(path)


def library_path() -> str:
    """Absolute path of the installed custom-op library (RESAMPLE_GRAD_LIBRARY overrides it)."""
    return _installed_library("libresample_grad_ops", "RESAMPLE_GRAD_LIBRARY")


def training_library_path() -> str:
    """Absolute path of the library of com.microsoft::ResizeGrad, for onnxruntime-training's CPU training sessions
    (resample_grad.training.session_options() registers it; RESAMPLE_GRAD_TRAINING_LIBRARY overrides it).

    Register it only for training sessions: a library with a custom com.microsoft domain makes onnxruntime fail on
    models that do not import com.microsoft once its optimizer inserts a contrib op (FusedConv, ...)."""
    return _installed_library("libresample_grad_training_ops", "RESAMPLE_GRAD_TRAINING_LIBRARY")


class OnnxruntimeMissing(ImportError):
    """Neither onnxruntime nor onnxruntime-training is installed."""


def require_onnxruntime():
    """The onnxruntime module (of onnxruntime or onnxruntime-training), or an ImportError saying how to get one."""
    try:
        import onnxruntime
    except ImportError as error:
        raise OnnxruntimeMissing(
            "resample_grad: onnxruntime is not installed (neither onnxruntime nor onnxruntime-training is importable); "
            'install it with `pip install "resample-grad[runtime]"` (or `pip install onnxruntime`), or install '
            "onnxruntime-training-cpu for on-device training (docs/training.md)"
        ) from error
    return onnxruntime


def machine() -> str:
    """The CPU the kernels run on, for benchmark tables: its model name and logical core count."""
    import platform

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as info:
            cpu = next((line.split(":", 1)[1].strip() for line in info if line.startswith("model name")), cpu)
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} logical cores"


def isa() -> str:
    """The instruction set the native kernels run with: "baseline", "avx2" or "avx512" (RESAMPLE_GRAD_ISA
    forces one; otherwise the best this CPU has). Raises RuntimeError when RESAMPLE_GRAD_ISA is bad."""
    import ctypes

    library = ctypes.CDLL(library_path())
    library.ResampleGradIsa.restype = ctypes.c_char_p
    answer = library.ResampleGradIsa().decode()
    if answer not in ("baseline", "avx2", "avx512"):
        raise RuntimeError(answer)
    return answer


def session_options(threads: int = 0, options=None):
    """SessionOptions with the library registered (and intra_op_num_threads when threads > 0)."""
    onnxruntime = require_onnxruntime()

    options = options or onnxruntime.SessionOptions()
    if threads:
        options.intra_op_num_threads = threads
    options.register_custom_ops_library(library_path())
    return options


def session(model, threads: int = 0, sess_options=None, **kwargs):
    """An onnxruntime.InferenceSession on the CPU with the resample_grad kernels registered.

    model: a ModelProto, serialized bytes or a path. kwargs go to InferenceSession.
    """
    onnxruntime = require_onnxruntime()

    if hasattr(model, "SerializeToString"):
        model = model.SerializeToString()
    elif isinstance(model, pathlib.Path):
        model = str(model)
    kwargs.setdefault("providers", ["CPUExecutionProvider"])
    return onnxruntime.InferenceSession(model, sess_options=session_options(threads, sess_options), **kwargs)


def run(session, feeds: dict, output_names=None) -> list:
    """session.run that also takes and returns bfloat16 arrays (ml_dtypes.bfloat16).

    onnxruntime's Python binding converts no bfloat16 numpy array, so every input
    and output goes through an OrtValue and IO binding.
    """
    import ctypes

    import ml_dtypes
    import numpy as np
    from onnx import TensorProto

    onnxruntime = require_onnxruntime()

    names = output_names or [o.name for o in session.get_outputs()]
    binding = session.io_binding()
    keep = []
    for name, array in feeds.items():
        array = np.asarray(array, order="C")  # (np.ascontiguousarray would turn a 0-d array into shape [1])
        if array.dtype == ml_dtypes.bfloat16:
            value = onnxruntime.OrtValue.ortvalue_from_numpy_with_onnx_type(array.view(np.uint16), TensorProto.BFLOAT16)
        else:
            value = onnxruntime.OrtValue.ortvalue_from_numpy(array)
        keep.append((array, value))
        binding.bind_ortvalue_input(name, value)
    for name in names:
        binding.bind_output(name, "cpu")
    session.run_with_iobinding(binding)
    results = []
    for value in binding.get_outputs():
        if value.data_type() == "tensor(bfloat16)":
            shape = value.shape()
            count = int(np.prod(shape)) if shape else 1
            raw = (ctypes.c_uint16 * count).from_address(value.data_ptr()) if count else []
            results.append(np.array(raw, dtype=np.uint16).view(ml_dtypes.bfloat16).reshape(shape))
        else:
            results.append(value.numpy())
    return results
