"""PyTorch export of the aten backward ops onto the resample_grad ops.

    torch.onnx.export(fn, args, dynamo=True, custom_translation_table=torch_translation_table())
    resample_grad.converters.export(fn_or_module, args, path)   # the same, plus attach(), saved

Each function below implements one aten overload (named in its docstring, as onnxscript's
torchlib does); torch's exporter traces it with the argument values of the node.
"""
from __future__ import annotations

from typing import Optional, Sequence

import onnx
from onnxscript import opset18 as op
from onnxscript.values import Opset

from resample_grad import opset

RG = Opset(opset.DOMAIN, opset.VERSION)
INTERPOLATION = ("bilinear", "nearest", "bicubic")  # aten's int codes 0, 1, 2
PADDING = ("zeros", "border", "reflection")


def _scale(value: Optional[float]) -> float:
    return float(value) if value is not None and value > 0 else 0.0


def aten_grid_sampler_2d_backward(grad_output, input, grid, interpolation_mode: int, padding_mode: int,
                                  align_corners: bool, output_mask: Sequence[bool]):
    """grid_sampler_2d_backward(Tensor grad_output, Tensor input, Tensor grid, int interpolation_mode,
    int padding_mode, bool align_corners, bool[2] output_mask) -> (Tensor, Tensor)

    output_mask: export() leaves a masked-off output unnamed, so the kernel skips its work.
    """
    return RG.GridSampler2DGrad(grad_output, input, grid, interpolation_mode=INTERPOLATION[interpolation_mode],
                                padding_mode=PADDING[padding_mode], align_corners=int(bool(align_corners)))


def aten_upsample_bilinear2d_backward(grad_output, output_size: Sequence[int], input_size: Sequence[int],
                                      align_corners: bool, scales_h: Optional[float] = None,
                                      scales_w: Optional[float] = None):
    """upsample_bilinear2d_backward(Tensor grad_output, SymInt[2] output_size, SymInt[4] input_size,
    bool align_corners, float? scales_h=None, float? scales_w=None) -> Tensor

    ResizeBilinearV2Grad reads only the shape of original_image: a zero tensor of input_size.
    """
    image = op.Expand(op.CastLike(0.0, grad_output), op.Constant(value_ints=[int(d) for d in input_size]))
    return RG.ResizeBilinearV2Grad(grad_output, image, align_corners=int(bool(align_corners)),
                                   half_pixel_centers=0 if align_corners else 1,
                                   scales=[_scale(scales_h), _scale(scales_w)])


def aten_upsample_nearest_exact1d_backward(grad_output, output_size: Sequence[int], input_size: Sequence[int],
                                           scales: Optional[float] = None):
    """_upsample_nearest_exact1d_backward(Tensor grad_output, SymInt[1] output_size, SymInt[3] input_size,
    float? scales=None) -> Tensor"""
    return RG.UpsampleNearestExact1dGrad(grad_output, input_size=[int(d) for d in input_size],
                                         output_size=[int(d) for d in output_size], scales=_scale(scales))


def aten_upsample_nearest_exact2d_backward(grad_output, output_size: Sequence[int], input_size: Sequence[int],
                                           scales_h: Optional[float] = None, scales_w: Optional[float] = None):
    """_upsample_nearest_exact2d_backward(Tensor grad_output, SymInt[2] output_size, SymInt[4] input_size,
    float? scales_h=None, float? scales_w=None) -> Tensor"""
    return RG.UpsampleNearestExact2dGrad(grad_output, input_size=[int(d) for d in input_size],
                                         output_size=[int(d) for d in output_size], scales_h=_scale(scales_h),
                                         scales_w=_scale(scales_w))


def torch_translation_table() -> dict:
    """{aten overload: translation function} for torch.onnx.export(..., dynamo=True, custom_translation_table=...)."""
    import torch

    aten = torch.ops.aten
    table = {
        aten.grid_sampler_2d_backward.default: aten_grid_sampler_2d_backward,
        aten.upsample_bilinear2d_backward.default: aten_upsample_bilinear2d_backward,
        aten._upsample_nearest_exact1d_backward.default: aten_upsample_nearest_exact1d_backward,
        aten._upsample_nearest_exact2d_backward.default: aten_upsample_nearest_exact2d_backward,
    }
    vec = getattr(aten.upsample_bilinear2d_backward, "vec", None)  # absent in current torch
    if vec is not None:
        table[vec] = aten_upsample_bilinear2d_backward
    return table


def _unname_unused_outputs(model: onnx.ModelProto) -> None:
    """A GridSampler2DGrad output nobody reads (the aten output_mask) loses its name: its work is skipped."""
    graph = model.graph
    used = {name for node in graph.node for name in node.input} | {o.name for o in graph.output}
    for node in graph.node:
        if node.domain == opset.DOMAIN and node.op_type == "GridSampler2DGrad":
            for i, name in enumerate(node.output):
                if name and name not in used:
                    node.output[i] = ""


def export(fn_or_module, args, path=None, **kwargs) -> onnx.ModelProto:
    """torch.onnx.export with the translation table, then attach(): the model runs in onnxruntime with or
    without the native library. Saved to path when given.

    A plain function is first traced to aten ops with make_fx, which runs torch.func transforms
    (vjp, grad) and autograd.grad: their backward ops (aten::grid_sampler_2d_backward, ...) become
    graph nodes that the translation table maps. torch.export alone cannot trace torch.func.
    """
    import torch
    from torch.fx.experimental.proxy_tensor import make_fx

    module = fn_or_module if isinstance(fn_or_module, torch.nn.Module) else make_fx(fn_or_module)(*args)
    program = torch.onnx.export(module, tuple(args), dynamo=True, custom_translation_table=torch_translation_table(),
                                **kwargs)
    model = program.model_proto
    del model.graph.value_info[:]  # the exporter's shape hints can be wrong after its optimizer; attach() infers anew
    _unname_unused_outputs(model)
    model = opset.attach(model)
    if path is not None:
        onnx.save(model, str(path))
    return model
