"""Converters: PyTorch programs and ONNX forward graphs in, Ascend ATC graphs out.

    torch_translation_table(), export(fn_or_module, args, path)   PyTorch export (torch_export.py)
    gradient_model(model, wrt=[...])                              gradients of GridSample / Resize models
"""
from .gradients import gradient_model
from .torch_export import export, torch_translation_table

__all__ = ["export", "gradient_model", "torch_translation_table"]
