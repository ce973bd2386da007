"""resample_grad: backward passes of spatial resampling as ONNX ops.

    resample_grad.opset       schemas, function bodies, NumPy references, attach()
    resample_grad.runtime     the native onnxruntime custom-op library
    resample_grad.converters  PyTorch export in, Ascend ATC out and back
    resample_grad.training    onnxruntime-training's API with GridSample, AffineGrid and Resize gradients on the CPU
"""
from importlib import metadata as _metadata

try:  # one source: the version in pyproject.toml, as installed
    __version__ = _metadata.version("resample-grad")
except _metadata.PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"
