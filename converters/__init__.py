"""Converters: PyTorch programs and ONNX forward graphs in, Ascend ATC graphs out and back.

    torch_translation_table(), export(fn_or_module, args, path)   PyTorch export (torch_export.py; needs torch)
    export_training_step(module, loss_fn, inputs, targets, path)  (loss, parameter gradients) of a training step
    ExportRefused, VerificationError                              an aten op refused; a model that disagrees
    gradient_model(model, wrt=[...])                              gradients of GridSample / Resize models
    to_ascend(model, soc, out_dir), from_ascend(model)            Ascend ATC (ascend.py)
"""
import functools

from . import torch_export
from .ascend import from_ascend, to_ascend
from .gradients import gradient_model
from .torch_export import ExportRefused, VerificationError, torch_translation_table

__all__ = ["ExportRefused", "VerificationError", "export", "export_training_step", "from_ascend", "gradient_model",
           "to_ascend", "torch_translation_table"]


def _needs_torch(function):
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        try:  # torch is optional for the package; say so instead of failing somewhere inside the export
            import torch  # noqa: F401
        except ImportError as error:
            raise ImportError(f"resample_grad.converters.{function.__name__} needs PyTorch, which is not installed: "
                              "pip install torch (the test extra pins torch==2.13.0)") from error
        return function(*args, **kwargs)
    return wrapper


export = _needs_torch(torch_export.export)
export_training_step = _needs_torch(torch_export.export_training_step)
