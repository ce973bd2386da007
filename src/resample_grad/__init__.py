"""resample_grad: backward passes of spatial resampling as ONNX ops.

    resample_grad.opset       schemas, onnxscript functions, NumPy references, attach()
    resample_grad.runtime     the native onnxruntime custom-op library
    resample_grad.converters  PyTorch export in, Ascend ATC out
"""
__version__ = "0.1.0"
