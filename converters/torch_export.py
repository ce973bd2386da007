"""PyTorch export of the aten backward ops onto the resample_grad ops.

    torch.onnx.export(fn, args, dynamo=True, custom_translation_table=torch_translation_table())
    resample_grad.converters.export(fn_or_module, args, path)   # the same, plus attach(), saved

Each function below implements one aten overload (named in its docstring, as onnxscript's
torchlib does); torch's exporter traces it with the argument values of the node.

Attention: trace() runs the function under sdpa_kernel([SDPBackend.MATH]), so F.scaled_dot_product_attention
is traced in its math form (matmul, softmax) and autograd's backward of it, which the exporter translates
exactly, instead of the fused CPU kernels' forward and backward ops, which it cannot.
"""
from __future__ import annotations

import contextlib
import functools
from collections.abc import Sequence

import numpy as np
import onnx
from onnxscript import opset18 as op
from onnxscript.values import Opset

from resample_grad import opset
from resample_grad.constants import INFERENCE_DOMAIN, INFERENCE_FUNCTION, LEARNING_RATE_INPUT, UPDATED
from resample_grad.constants import INTERPOLATION_MODES as INTERPOLATION  # aten's int codes are the positions
from resample_grad.constants import PADDING_MODES as PADDING

from . import torch_backward

RG = Opset(opset.DOMAIN, opset.VERSION)


def torch_scale(value: float | None, input_size: int, output_size: int) -> float:
    """A torch scale argument (a double, or None) as the ops' float32 attribute, for one axis.

    aten's float kernels use only float32(1.0 / scale). When that equals the size ratio in / out in
    float32 (scale_factor=2, 2.1 for 10 -> 21, ...) the attribute is 0: the ops then use the same ratio.
    Otherwise a float32 attribute holding float32(scale) can give a different float32(1.0 / attribute)
    (scale 1.7: 0.58823526 instead of 0.5882353), so the attribute is the float32 nearest to the scale
    whose reciprocal rounds as aten's does, when one within 4 ulps exists, else float32(scale).
    """
    if value is None or value <= 0:
        return 0.0
    value = float(value)
    want = np.float32(1.0 / value)
    if output_size > 0 and np.float32(input_size) / np.float32(output_size) == want:
        return 0.0
    nearest = np.float32(value)
    candidates = [nearest]
    up = down = nearest
    for _ in range(4):
        up, down = np.nextafter(up, np.float32(np.inf)), np.nextafter(down, np.float32(0))
        candidates += [up, down]
    for candidate in candidates:
        if np.float32(1.0 / float(candidate)) == want:
            return float(candidate)
    return float(nearest)


def _ints(values) -> list:
    return [int(v) for v in values]


def _axis_scale(value, input_size, output_size, axis: int) -> float:
    """torch_scale for spatial axis `axis` (counted from the end) of aten's input_size / output_size arguments."""
    return torch_scale(value, int(input_size[axis]), int(output_size[axis]))


def _scales(values, input_size, output_size) -> list:
    """torch_scale of each spatial axis (scales in spatial order, last axis last)."""
    count = len(values)
    return [_axis_scale(v, input_size, output_size, k - count) for k, v in enumerate(values)]


def _planar(input_size, output_size, scales_h, scales_w, align_corners=None) -> dict:
    """The attributes of a 2-D op: input_size, output_size, align_corners (when given), scales_h, scales_w."""
    aligned = {} if align_corners is None else {"align_corners": int(bool(align_corners))}
    return dict(input_size=_ints(input_size), output_size=_ints(output_size), **aligned,
                scales_h=_axis_scale(scales_h, input_size, output_size, -2),
                scales_w=_axis_scale(scales_w, input_size, output_size, -1))


# --------------------------------------------------------------------------- grid sampling

def aten_grid_sampler_2d_backward(grad_output, input, grid, interpolation_mode: int, padding_mode: int,
                                  align_corners: bool, output_mask: Sequence[bool]):
    """grid_sampler_2d_backward(Tensor grad_output, Tensor input, Tensor grid, int interpolation_mode,
    int padding_mode, bool align_corners, bool[2] output_mask) -> (Tensor, Tensor)

    output_mask: export() leaves a masked-off output unnamed, so the kernel skips its work.
    """
    return RG.GridSampler2DGrad(grad_output, input, grid, interpolation_mode=INTERPOLATION[interpolation_mode],
                                padding_mode=PADDING[padding_mode], align_corners=int(bool(align_corners)))


def aten_grid_sampler_3d_backward(grad_output, input, grid, interpolation_mode: int, padding_mode: int,
                                  align_corners: bool, output_mask: Sequence[bool]):
    """grid_sampler_3d_backward(Tensor grad_output, Tensor input, Tensor grid, int interpolation_mode,
    int padding_mode, bool align_corners, bool[2] output_mask) -> (Tensor, Tensor)"""
    return RG.GridSampler3DGrad(grad_output, input, grid, interpolation_mode=INTERPOLATION[interpolation_mode],
                                padding_mode=PADDING[padding_mode], align_corners=int(bool(align_corners)))


# --------------------------------------------------------------------------- nearest

def aten_upsample_nearest1d_backward(grad_output, output_size: Sequence[int], input_size: Sequence[int],
                                     scales: float | None = None):
    """upsample_nearest1d_backward(Tensor grad_output, SymInt[1] output_size, SymInt[3] input_size,
    float? scales=None) -> Tensor  (UpsampleNearest2dGrad's 1-D form: the axis is W)"""
    return RG.UpsampleNearest2dGrad(grad_output, input_size=_ints(input_size), output_size=_ints(output_size),
                                    scales_w=_axis_scale(scales, input_size, output_size, -1))


def aten_upsample_nearest2d_backward(grad_output, output_size: Sequence[int], input_size: Sequence[int],
                                     scales_h: float | None = None, scales_w: float | None = None):
    """upsample_nearest2d_backward(Tensor grad_output, SymInt[2] output_size, SymInt[4] input_size,
    float? scales_h=None, float? scales_w=None) -> Tensor"""
    return RG.UpsampleNearest2dGrad(grad_output, **_planar(input_size, output_size, scales_h, scales_w))


def _volume(input_size, output_size, scales_d, scales_h, scales_w) -> dict:
    """The attributes of UpsampleNearest{,Exact}3dGrad: input_size, and output_size or scales (GE's ops take one of
    the two: scales when one matters)."""
    scales = _scales([scales_d, scales_h, scales_w], input_size, output_size)
    sizes = {"scales": scales} if any(scales) else {"output_size": _ints(output_size)}
    return {"input_size": _ints(input_size), **sizes}


def aten_upsample_nearest3d_backward(grad_output, output_size: Sequence[int], input_size: Sequence[int],
                                     scales_d: float | None = None, scales_h: float | None = None,
                                     scales_w: float | None = None):
    """upsample_nearest3d_backward(Tensor grad_output, SymInt[3] output_size, SymInt[5] input_size,
    float? scales_d=None, float? scales_h=None, float? scales_w=None) -> Tensor"""
    return RG.UpsampleNearest3dGrad(grad_output, **_volume(input_size, output_size, scales_d, scales_h, scales_w))


def aten_upsample_nearest_exact1d_backward(grad_output, output_size: Sequence[int], input_size: Sequence[int],
                                           scales: float | None = None):
    """_upsample_nearest_exact1d_backward(Tensor grad_output, SymInt[1] output_size, SymInt[3] input_size,
    float? scales=None) -> Tensor"""
    return RG.UpsampleNearestExact1dGrad(grad_output, input_size=_ints(input_size), output_size=_ints(output_size),
                                         scales=_axis_scale(scales, input_size, output_size, -1))


def aten_upsample_nearest_exact2d_backward(grad_output, output_size: Sequence[int], input_size: Sequence[int],
                                           scales_h: float | None = None, scales_w: float | None = None):
    """_upsample_nearest_exact2d_backward(Tensor grad_output, SymInt[2] output_size, SymInt[4] input_size,
    float? scales_h=None, float? scales_w=None) -> Tensor"""
    return RG.UpsampleNearestExact2dGrad(grad_output, **_planar(input_size, output_size, scales_h, scales_w))


def aten_upsample_nearest_exact3d_backward(grad_output, output_size: Sequence[int], input_size: Sequence[int],
                                           scales_d: float | None = None, scales_h: float | None = None,
                                           scales_w: float | None = None):
    """_upsample_nearest_exact3d_backward(Tensor grad_output, SymInt[3] output_size, SymInt[5] input_size,
    float? scales_d=None, float? scales_h=None, float? scales_w=None) -> Tensor"""
    return RG.UpsampleNearestExact3dGrad(grad_output, **_volume(input_size, output_size, scales_d, scales_h, scales_w))


# --------------------------------------------------------------------------- linear, cubic, antialias

def aten_upsample_linear1d_backward(grad_output, output_size: Sequence[int], input_size: Sequence[int],
                                    align_corners: bool, scales: float | None = None):
    """upsample_linear1d_backward(Tensor grad_output, SymInt[1] output_size, SymInt[3] input_size,
    bool align_corners, float? scales=None) -> Tensor  (UpsampleBilinear2dGrad's 1-D form)"""
    return RG.UpsampleBilinear2dGrad(grad_output, input_size=_ints(input_size), output_size=_ints(output_size),
                                     align_corners=int(bool(align_corners)),
                                     scales_w=_axis_scale(scales, input_size, output_size, -1))


def aten_upsample_bilinear2d_backward(grad_output, output_size: Sequence[int], input_size: Sequence[int],
                                      align_corners: bool, scales_h: float | None = None,
                                      scales_w: float | None = None):
    """upsample_bilinear2d_backward(Tensor grad_output, SymInt[2] output_size, SymInt[4] input_size,
    bool align_corners, float? scales_h=None, float? scales_w=None) -> Tensor

    ResizeBilinearV2Grad (the GE op with the widest device support) reads only the shape of
    original_image: a zero tensor of input_size.
    """
    image = op.Expand(op.CastLike(0.0, grad_output), op.Constant(value_ints=_ints(input_size)))
    return RG.ResizeBilinearV2Grad(grad_output, image, align_corners=int(bool(align_corners)),
                                   half_pixel_centers=0 if align_corners else 1,
                                   scales=_scales([scales_h, scales_w], input_size, output_size))


def aten_upsample_trilinear3d_backward(grad_output, output_size: Sequence[int], input_size: Sequence[int],
                                       align_corners: bool, scales_d: float | None = None,
                                       scales_h: float | None = None, scales_w: float | None = None):
    """upsample_trilinear3d_backward(Tensor grad_output, SymInt[3] output_size, SymInt[5] input_size,
    bool align_corners, float? scales_d=None, float? scales_h=None, float? scales_w=None) -> Tensor"""
    return RG.UpsampleTrilinear3dBackward(grad_output, input_size=_ints(input_size), output_size=_ints(output_size),
                                          align_corners=int(bool(align_corners)),
                                          **dict(zip(("scale_d", "scale_h", "scale_w"),
                                                     _scales([scales_d, scales_h, scales_w], input_size, output_size),
                                                     strict=True)))


def aten_upsample_bicubic2d_backward(grad_output, output_size: Sequence[int], input_size: Sequence[int],
                                     align_corners: bool, scales_h: float | None = None,
                                     scales_w: float | None = None):
    """upsample_bicubic2d_backward(Tensor grad_output, SymInt[2] output_size, SymInt[4] input_size,
    bool align_corners, float? scales_h=None, float? scales_w=None) -> Tensor"""
    return RG.UpsampleBicubic2dGrad(grad_output, **_planar(input_size, output_size, scales_h, scales_w, align_corners))


def aten_upsample_bilinear2d_aa_backward(grad_output, output_size: Sequence[int], input_size: Sequence[int],
                                         align_corners: bool, scales_h: float | None = None,
                                         scales_w: float | None = None):
    """_upsample_bilinear2d_aa_backward(Tensor grad_output, SymInt[2] output_size, SymInt[4] input_size,
    bool align_corners, float? scales_h=None, float? scales_w=None) -> Tensor"""
    return RG.UpsampleBilinear2dAABackward(grad_output,
                                           **_planar(input_size, output_size, scales_h, scales_w, align_corners))


def aten_upsample_bicubic2d_aa_backward(grad_output, output_size: Sequence[int], input_size: Sequence[int],
                                        align_corners: bool, scales_h: float | None = None,
                                        scales_w: float | None = None):
    """_upsample_bicubic2d_aa_backward(Tensor grad_output, SymInt[2] output_size, SymInt[4] input_size,
    bool align_corners, float? scales_h=None, float? scales_w=None) -> Tensor"""
    return RG.UpsampleBicubic2dAAGrad(grad_output,
                                      **_planar(input_size, output_size, scales_h, scales_w, align_corners))


# aten overload name -> translation; torch 2.13 has no .vec overload of any of these backward ops
_TRANSLATIONS = {
    "grid_sampler_2d_backward": aten_grid_sampler_2d_backward,
    "grid_sampler_3d_backward": aten_grid_sampler_3d_backward,
    "upsample_nearest1d_backward": aten_upsample_nearest1d_backward,
    "upsample_nearest2d_backward": aten_upsample_nearest2d_backward,
    "upsample_nearest3d_backward": aten_upsample_nearest3d_backward,
    "_upsample_nearest_exact1d_backward": aten_upsample_nearest_exact1d_backward,
    "_upsample_nearest_exact2d_backward": aten_upsample_nearest_exact2d_backward,
    "_upsample_nearest_exact3d_backward": aten_upsample_nearest_exact3d_backward,
    "upsample_linear1d_backward": aten_upsample_linear1d_backward,
    "upsample_bilinear2d_backward": aten_upsample_bilinear2d_backward,
    "upsample_trilinear3d_backward": aten_upsample_trilinear3d_backward,
    "upsample_bicubic2d_backward": aten_upsample_bicubic2d_backward,
    "_upsample_bilinear2d_aa_backward": aten_upsample_bilinear2d_aa_backward,
    "_upsample_bicubic2d_aa_backward": aten_upsample_bicubic2d_aa_backward,
}


def torch_translation_table() -> dict:
    """{aten overload: translation function} for torch.onnx.export(..., dynamo=True, custom_translation_table=...):
    every overload (.default, and .vec where torch has one) of the family's backward ops above (resample_grad ops),
    merged with torch_backward.TRANSLATIONS (standard ONNX: convolution and pooling backward, grid_sampler_3d, and
    torchlib's wrong translations replaced). The exporter never decomposes an op of this table."""
    import torch

    table = {}
    for name, translation in {**_TRANSLATIONS, **torch_backward.TRANSLATIONS}.items():
        if "." in name:
            packet, overload = name.split(".")
            table[getattr(getattr(torch.ops.aten, packet), overload)] = translation
            continue
        packet = getattr(torch.ops.aten, name)
        for overload in packet.overloads():
            if overload in ("default", "vec"):
                table[getattr(packet, overload)] = translation
    return table


def _unname_unused_outputs(model: onnx.ModelProto) -> None:
    """A grid sampler output nobody reads (the aten output_mask) loses its name: its work is skipped."""
    graph = model.graph
    used = {name for node in graph.node for name in node.input} | {o.name for o in graph.output}
    for node in graph.node:
        if node.domain == opset.DOMAIN and node.op_type in ("GridSampler2DGrad", "GridSampler3DGrad"):
            for i, name in enumerate(node.output):
                if name and name not in used:
                    node.output[i] = ""


def _spelled_out(model: onnx.ModelProto) -> None:
    """Two forms torch's exporter writes, each as its plain equivalent, which every runtime reads as the spec says
    (tests/portable/test_runtime_bugs.py): a ConstantOfShape without a value gets the spec's default, a float32
    zero, explicitly (tract reads float64); a constant-mode Pad whose pads are a constant with negative entries
    (autograd's backward of a pad: a crop) becomes a Slice of those axes, then a Pad of the positive entries if any
    (tract panics on negative pads)."""
    from onnx import helper, numpy_helper

    graph = model.graph
    pads_of = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    nodes = []
    for node in graph.node:
        if node.op_type == "ConstantOfShape" and node.domain in ("", "ai.onnx") and not node.attribute:
            node.attribute.append(helper.make_attribute("value", numpy_helper.from_array(np.zeros(1, np.float32))))
        pads = pads_of.get(node.input[1]) if node.op_type == "Pad" and len(node.input) > 1 else None
        mode = next((a.s for a in node.attribute if a.name == "mode"), b"constant")
        if (pads is None or not (pads < 0).any() or mode != b"constant" or node.domain not in ("", "ai.onnx")
                or (len(node.input) > 3 and node.input[3])):
            nodes.append(node)
            continue
        rank, name = len(pads) // 2, node.output[0]
        axes = [k for k in range(rank) if min(pads[k], pads[rank + k]) < 0]
        bounds = {"starts": [max(-pads[k], 0) for k in axes],  # (Slice's input order)
                  "ends": [pads[rank + k] if pads[rank + k] < 0 else np.iinfo(np.int64).max for k in axes],
                  "axes": axes}
        graph.initializer.extend(numpy_helper.from_array(np.array(v, np.int64), f"{name}_crop_{k}")
                                 for k, v in bounds.items())
        cropped = f"{name}_cropped" if (pads > 0).any() else name
        nodes.append(helper.make_node("Slice", [node.input[0], *(f"{name}_crop_{k}" for k in bounds)], [cropped],
                                      name=f"{node.name}_crop"))
        if (pads > 0).any():
            graph.initializer.append(numpy_helper.from_array(np.maximum(pads, 0).astype(np.int64), f"{name}_pads"))
            nodes.append(helper.make_node("Pad", [cropped, f"{name}_pads", *node.input[2:3]], [name], name=node.name))
    del graph.node[:]
    graph.node.extend(nodes)


# --------------------------------------------------------------------------- tracing

def _strided_index(numel: int, size, stride, storage_offset):
    """The flat indices into a contiguous tensor of numel elements that as_strided(size, stride, storage_offset) reads,
    in the view's order (1-D); None when the view reaches outside the tensor."""
    size, stride = [int(n) for n in size], np.array([int(s) for s in stride], np.int64)
    index = (int(storage_offset or 0) + np.tensordot(stride, np.indices(size, dtype=np.int64), axes=1)).reshape(-1)
    return None if index.size and (index.min() < 0 or index.max() >= numel) else index


def _as_strided_scatter(self, src, size, stride, storage_offset=None):
    """as_strided_scatter on a contiguous tensor (torch's own decomposition emits prims.as_strided_scatter, which has
    no ONNX translation). Autograd's backward of an in-place update of a view (CopySlices: `t[..., 0] += 1`,
    `grid[..., i] = ...`) functionalizes into this op. Written as a Where of a constant mask of the view's elements
    between src, brought into place by a Gather at constant 1-D indices, and self: not as an index_put, which torch's
    exporter writes as a ScatterND, which tinygrad computes in place, in its data input (tests/portable/
    test_runtime_bugs.py)."""
    import torch

    index = _strided_index(self.numel(), size, stride, storage_offset)
    if not self.is_contiguous() or index is None:
        return NotImplemented
    if np.array_equal(index, np.arange(self.numel())):  # the view is the whole tensor in order (an in-place op on
        return src.reshape(self.shape).clone()  # all of it): nothing to merge
    place = np.zeros(self.numel(), np.int64)  # the element of src at each position of self (the last one written)
    place[index] = np.arange(index.size)
    mask = np.zeros(self.numel(), bool)
    mask[index] = True
    placed = src.reshape(-1).index_select(0, torch.from_numpy(place))
    return torch.where(torch.from_numpy(mask), placed, self.reshape(-1)).reshape(self.shape)


def _slice_scatter(self, src, dim=0, start=None, end=None, step=1):
    """slice_scatter with step 1 as the Concat of src and the parts of self around it (torchlib's ScatterND is
    computed by tinygrad in place, in its data input: tests/portable/test_runtime_bugs.py)."""
    import torch

    size = self.shape[dim]
    if step != 1 or not all(isinstance(v, int) for v in (size, start or 0, end or 0)):
        return NotImplemented
    start, end, _ = slice(start, end).indices(size)
    end = max(end, start)
    parts = [self.narrow(dim, 0, start), src, self.narrow(dim, end, size - end)]
    return torch.cat([p for p in parts if p.shape[dim]] or [src], dim)


def _slice_backward(grad_output, input_sizes, dim, start, end, step):
    """slice_backward (torch decomposes it into a slice_scatter on zeros after tracing, which torchlib writes as a
    ScatterND) as _slice_scatter on zeros."""
    return _slice_scatter(grad_output.new_zeros(input_sizes), grad_output, dim, start, end, step)


def _as_strided(self, size, stride, storage_offset=None):
    """as_strided of a contiguous tensor: a Reshape when it reads the tensor in order (functionalization writes one
    for an in-place op on a whole tensor, monai's LeakyReLU(inplace=True)), else a Gather at constant 1-D flat indices
    and a Reshape, not torchlib's Gather at constant indices of the view's shape (tinygrad fails on constant indices
    of rank >= 2: tests/portable/test_runtime_bugs.py)."""
    import torch

    index = _strided_index(self.numel(), size, stride, storage_offset)
    if not self.is_contiguous() or self.storage_offset() != 0 or index is None:
        return NotImplemented
    if np.array_equal(index, np.arange(self.numel())):
        return self.reshape(size)
    return self.reshape(-1).index_select(0, torch.from_numpy(index)).reshape(size)


def _diagonal_scatter(self, src, offset=0, dim1=0, dim2=1):
    """diagonal_scatter as _as_strided_scatter (torch's decomposition writes with prims.copy_to, a mutation)."""
    if not self.is_contiguous():
        return NotImplemented
    view = self.diagonal(offset, dim1, dim2)
    return _as_strided_scatter(self, src, view.shape, view.stride(), view.storage_offset())


class ExportRefused(NotImplementedError):
    """An aten op that the export cannot translate exactly: the message names the op and why."""

    def __init__(self, aten_op: str, reason: str):
        super().__init__(f"export: {aten_op} is refused: {reason}")
        self.aten_op = aten_op


# aten op -> why it is refused (the ops torch's exporter would otherwise translate inexactly or fail on obscurely)
REFUSED = {
    "aten._ctc_loss": "CTC's forward-backward recursion over time has no exact translation here (F.ctc_loss); "
                      "compute the CTC loss outside the exported step",
}


def _refusing():
    """A torch dispatch mode that raises ExportRefused at the first call of a REFUSED op (before its kernel runs: the
    CTC kernel fails obscurely under torch.func transforms)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Refusing(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            name = f"aten.{func.__name__.split('.')[0]}"
            if name in REFUSED:
                raise ExportRefused(name, REFUSED[name])
            return func(*args, **(kwargs or {}))
    return Refusing()


def _reduced(grad_output, reduction: int, count: int, rank: int):
    """grad_output of a loss reduced over `count` samples (mean), not (sum), or per sample (none: a trailing
    axis per extra `rank`)."""
    if reduction == 0:
        return grad_output.reshape(-1, *[1] * rank)
    return grad_output / count if reduction == 1 else grad_output


def _multi_margin_loss_backward(grad_output, self, target, p, margin, weight=None, reduction=1):
    """multi_margin_loss_backward (torch has no decomposition): z_ij = margin - x_iy + x_ij for j != y, the loss
    sum_j max(0, z_ij)^p w_y / C; each active term adds its derivative at j and takes it from y."""
    import torch

    x, t = torch.atleast_2d(self), torch.atleast_1d(target).unsqueeze(1)
    count, classes = x.shape
    z = margin - x.gather(1, t) + x
    d = ((z * 2 if p == 2 else torch.ones_like(z)) * ((z > 0) & (torch.arange(classes) != t))) / classes
    if weight is not None:
        d = d * weight[t]
    d = d * _reduced(grad_output, reduction, count, 1)
    return (d - d.sum(1, keepdim=True) * torch.nn.functional.one_hot(t[:, 0], classes).to(d)).reshape(self.shape)


def _multilabel_margins(self, target):
    """multilabel_margin_loss's terms: (x as [N, C], the target slots before each row's first -1 [N, C], their
    classes, is_target [N, C], z [N, slot, class] = 1 - (x_slot - x_class), which pairs count [N, slot, class])."""
    import torch

    x, labels = torch.atleast_2d(self), torch.atleast_2d(target)
    classes = x.shape[1]
    index = torch.arange(classes)
    kept = index < torch.where(labels == -1, index, classes).amin(-1, keepdim=True)
    slots = torch.where(kept, labels, 0)
    is_target = ((index == torch.where(kept, labels, -1).unsqueeze(-1)).any(1))
    z = 1 - x.gather(1, slots).unsqueeze(2) + x.unsqueeze(1)
    return x, kept, slots, is_target, z, kept.unsqueeze(2) & ~is_target.unsqueeze(1)


def _multilabel_margin_loss_forward(self, target, reduction):
    """multilabel_margin_loss_forward: torch's decomposition counts the slots after a row's -1 as more targets of
    class 0 (it gathers them at 0 but does not mask their terms); these are masked here."""
    x, kept, slots, is_target, z, pairs = _multilabel_margins(self, target)
    loss = (z.clamp_min(0) * pairs).sum((1, 2)) / x.shape[1]
    loss = loss.mean() if reduction == 1 else loss.sum() if reduction == 2 else loss.reshape(self.shape[:-1])
    return loss, is_target.to(self.dtype).reshape(target.shape)


def _multilabel_margin_loss_backward(grad_output, self, target, reduction, is_target):
    """multilabel_margin_loss_backward (torch has no decomposition): each counted pair (slot k, class j) with
    1 - (x_k - x_j) > 0 adds 1/C at j and takes it from k."""
    x, kept, slots, _, z, pairs = _multilabel_margins(self, target)
    count, classes = x.shape
    a = ((z > 0) & pairs).to(x.dtype) / classes * _reduced(grad_output, reduction, count, 2)
    return a.sum(1).scatter_add(1, slots, -a.sum(2) * kept).reshape(self.shape)


def _adaptive_max_pool(decomposition, name):
    """torch's decomposition of adaptive_max_pool{2,3}d (global, or windows that divide the input evenly: max
    pooling with indices), refused for uneven windows, which it does not decompose and torchlib lacks."""
    def pool(input, output_size):
        result = decomposition(input, output_size)
        if result is NotImplemented:
            raise ExportRefused(name, f"output_size {list(output_size)} does not divide the input's spatial shape "
                                      f"{list(input.shape[2:])}: only even windows are translated (max pooling)")
        return result
    return pool


def _scatter_indices(grad_output, self, indices):
    """adaptive_max_pool{2,3}d_backward: the gradient added at the flat per-plane indices of the maxima."""
    flat = self.new_zeros(self.shape).flatten(2)
    return flat.scatter_add(2, indices.flatten(2), grad_output.flatten(2)).view(self.shape)


def _decompositions() -> dict:
    """What the tracing step decomposes, beyond what torch.onnx.export decomposes itself (every op that neither
    torchlib nor the translation table has): the three view-scatter ops above, slice_backward and as_strided of a
    contiguous tensor; torch's decompositions of the batch-norm ops, which torchlib translates with training=False
    (the running statistics instead of the batch's); adaptive max pooling and its backward; the margin losses'
    backward ops (torch has no decomposition of them) and multilabel_margin_loss_forward (torch's decomposition is
    wrong after a -1)."""
    import torch
    from torch._decomp import decomposition_table as table

    aten = torch.ops.aten
    batch_norm = [aten.native_batch_norm.default, aten._native_batch_norm_legit_functional.default,
                  aten._native_batch_norm_legit.default, aten._native_batch_norm_legit.no_stats]
    return {aten.as_strided_scatter.default: _as_strided_scatter, aten.diagonal_scatter.default: _diagonal_scatter,
            aten.slice_scatter.default: _slice_scatter, aten.slice_backward.default: _slice_backward,
            aten.as_strided.default: _as_strided,
            **{overload: table[overload] for overload in batch_norm},
            aten.adaptive_max_pool2d.default: _adaptive_max_pool(table[aten.adaptive_max_pool2d.default],
                                                                 "aten.adaptive_max_pool2d"),
            aten.adaptive_max_pool3d.default: _adaptive_max_pool(table[aten.adaptive_max_pool3d.default],
                                                                 "aten.adaptive_max_pool3d"),
            aten.adaptive_max_pool2d_backward.default: _scatter_indices,
            aten.adaptive_max_pool3d_backward.default: _scatter_indices,
            aten.multi_margin_loss_backward.default: _multi_margin_loss_backward,
            aten.multilabel_margin_loss_forward.default: _multilabel_margin_loss_forward,
            aten.multilabel_margin_loss_backward.default: _multilabel_margin_loss_backward}


def _under(context, fn):
    """fn run inside context()."""
    @functools.wraps(fn)
    def run(*args):
        with context():
            return fn(*args)
    return run


def trace(fn, args):
    """fn as a functional aten graph (torch.fx.GraphModule) that torch.onnx.export translates completely.

    One make_fx pass of functionalize(fn) with _decompositions(): it runs fn, so torch.func transforms (vjp, grad)
    and torch.autograd.grad leave their backward ops as nodes, and functionalizes what it records (in-place updates,
    views and slice assignment become functional ops; an update of an input stays as a copy_ into it). When an arg
    requires grad, a make_fx pass of fn comes first (functionalize's inputs would not require grad). Passes run on
    clones of args, so fn's in-place updates (BatchNorm's running statistics) do not reach the caller's tensors.
    """
    import torch
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch.nn.attention import SDPBackend, sdpa_kernel

    def clones():
        return [a.clone() if isinstance(a, torch.Tensor) else a for a in args]

    try:
        with sdpa_kernel([SDPBackend.MATH]):  # attention as matmul and softmax (see the module docstring)
            if any(isinstance(a, torch.Tensor) and a.requires_grad for a in args):
                # functionalize's inputs do not require grad, and fn may take autograd.grad of them: a first pass
                # records fn's ops on the args as they are, and the functional pass traces that graph
                fn = make_fx(_under(_refusing, fn))(*clones())
            return make_fx(torch.func.functionalize(_under(_refusing, fn), remove="mutations"),
                           decomposition_table=_decompositions())(*clones())
    except RuntimeError as error:
        if "_local_scalar_dense" not in str(error):
            raise
        raise ExportRefused("aten._local_scalar_dense", "the function reads a tensor's value in Python (data-dependent "
                            "control flow, such as F.gaussian_nll_loss's check `torch.any(var < 0)` on a tensor var), "
                            "which a traced graph cannot follow; compute that part without branching on tensor "
                            "values") from None


def _spec(pytree, tree):
    """tree's pytree.TreeSpec with its leaves as plain TreeSpecs: torch 2.13 deprecates LeafSpec, and every copy of
    one (run_decompositions deep-copies the program's module call graph) warns that it is (a FutureWarning)."""
    def rebuilt(spec):
        if spec.is_leaf():
            return pytree.TreeSpec(None, None, [])
        return pytree.TreeSpec(spec.type, spec.context, [rebuilt(child) for child in spec.children()])
    return rebuilt(pytree.tree_flatten(tree)[1])


def _program(graph, args):
    """trace()'s graph as a torch.export.ExportedProgram (every input a user input, its constant tensors lifted),
    which torch.onnx.export translates without first capturing the graph again with torch.export (a whole trace of
    it); None when an argument is not a tensor or the graph holds what an ExportedProgram cannot (an output that is
    not a tensor, an op left mutating), and torch.onnx.export then captures the graph itself. graph is left as it
    is (the program has a copy of it).

    Dropped: functionalize's copies into inputs (in-place updates of an input, such as BatchNorm's running
    statistics), whose uses read the copied value instead; torch.onnx.export drops input mutations as well, and a
    step returns the updated buffers as outputs. Every node's value becomes a fake tensor of one FakeTensorMode,
    which the exporter's run_decompositions traces with.
    """
    import copy

    import torch
    try:  # torch's private modules, as torch 2.13 has them; another torch may not: the graph goes as it is
        from torch._export.passes.lift_constants_pass import ConstantAttrMap, lift_constants_pass
        from torch._export.verifier import SpecViolationError
        from torch._subclasses.fake_tensor import FakeTensorMode
        from torch.export import graph_signature as signature
        from torch.export.exported_program import ExportedProgram, ModuleCallEntry, ModuleCallSignature
        from torch.fx.experimental.symbolic_shapes import ShapeEnv
        from torch.utils import _pytree as pytree
    except ImportError:
        return None

    graph = torch.fx.GraphModule(graph, copy.deepcopy(graph.graph))  # (the caller's graph stays as it is)
    nodes = graph.graph
    inputs = [node for node in nodes.nodes if node.op == "placeholder"]
    output = next(node for node in nodes.nodes if node.op == "output")
    outputs = pytree.tree_leaves(output.args[0])
    if not all(isinstance(a, torch.Tensor) for a in args) or not all(isinstance(o, torch.fx.Node) for o in outputs):
        return None
    for node in list(nodes.nodes):
        if node.target is torch.ops.aten.copy_.default and node.args[0].op == "placeholder":
            into, value = (n.meta.get("val") for n in node.args)
            if into is None or value is None or (into.shape, into.dtype) != (value.shape, value.dtype):
                return None
            node.replace_all_uses_with(node.args[1])
            nodes.erase_node(node)
    outputs = pytree.tree_leaves(output.args[0])
    output.args = (tuple(outputs),)
    nodes.eliminate_dead_code()  # (and the unread outputs of multi-output ops, which have no value)
    graph.recompile()
    fake = FakeTensorMode(shape_env=ShapeEnv(), export=True)

    def faked(value):
        if isinstance(value, torch.Tensor):
            with fake:
                return torch.empty_strided(value.shape, value.stride(), dtype=value.dtype, device=value.device)
        return type(value)(faked(v) for v in value) if isinstance(value, (list, tuple)) else value

    for node in nodes.nodes:
        if node.op == "get_attr":  # a constant tensor, which lift_constants_pass makes an input
            node.meta.setdefault("val", getattr(graph, node.target))
            node.meta.setdefault("nn_module_stack", {})
        if "val" in node.meta:
            node.meta["val"] = faked(node.meta["val"])
    spec = signature.ExportGraphSignature(
        input_specs=[signature.InputSpec(signature.InputKind.USER_INPUT, signature.TensorArgument(node.name), None)
                     for node in inputs],
        output_specs=[signature.OutputSpec(signature.OutputKind.USER_OUTPUT, signature.TensorArgument(node.name),
                                           None) for node in outputs])
    constants = lift_constants_pass(graph, spec, ConstantAttrMap())
    call = ModuleCallSignature(inputs=[], outputs=[], in_spec=_spec(pytree, (tuple(args), {})),
                               out_spec=_spec(pytree, tuple(outputs)))
    try:
        return ExportedProgram(root=graph, graph=nodes, graph_signature=spec, state_dict={}, range_constraints={},
                               module_call_graph=[ModuleCallEntry("", call)], constants=constants)
    except (SpecViolationError, TypeError):  # (TypeError: another torch's ExportedProgram signature)
        return None


# --------------------------------------------------------------------------- verification

class VerificationError(RuntimeError):
    """The exported model disagrees with torch on the example inputs: the message names the output and its error."""


# The reference is torch run in float64 (module, inputs and state in double). Torch's noise is the largest error to
# it of torch's own runs in the model's dtype (at the point and at JITTERS points a few ulps away), over all
# outputs; an output fails when onnxruntime's error to the reference exceeds SLACK times that noise plus TOLERANCE
# (by dtype). Errors are relative to max(the output's largest magnitude, a thousandth of the largest magnitude of
# all outputs). Rounding noise passes: a bias gradient that batch norm cancels is noise in torch and onnxruntime
# alike, and a ReLU, LeakyReLU or max input within rounding of its kink flips in some runs (a deep batch-normed
# network has such inputs at any point: torch's own runs then err by percents). A wrong translation (a wrong scale,
# an ignored argument) errs by about the output's magnitude.
SLACK = 8
JITTERS = 2
TOLERANCE = {"float64": 1e-8, "float32": 1e-4, "float16": 1e-2, "bfloat16": 5e-2}
# ops whose outputs are random: torch's run cannot be reproduced, so such a model is not verified
RANDOM_OPS = {"Dropout", "RandomUniform", "RandomUniformLike", "RandomNormal", "RandomNormalLike", "Bernoulli",
              "Multinomial"}


def _numpy(t):
    """A torch tensor as numpy (bfloat16 as ml_dtypes.bfloat16, which numpy lacks)."""
    import torch

    if t.dtype == torch.bfloat16:
        import ml_dtypes

        return t.detach().float().numpy().astype(ml_dtypes.bfloat16)
    return t.detach().numpy()


def _errors(ours: list, runs: list, exact: list, names: list) -> dict:
    """{output name: (error, bound)} of each output over its bound (see SLACK): ours (onnxruntime's arrays) against
    exact (torch's float64 tensors); runs: torch's outputs in the model's dtype, at the point first (integer
    outputs must equal these) and at the jittered points."""
    magnitudes = [float(e.abs().max()) if e.numel() else 0.0 for e in exact if e.is_floating_point()]
    floor = 1e-3 * max(magnitudes, default=0.0)
    exact = [e.detach().double().numpy() if e.is_floating_point() else None for e in exact]
    scales = [None if e is None else max(float(np.abs(e).max(initial=0.0)), floor) or 1.0 for e in exact]

    def error(a, k):
        return float(np.abs(np.asarray(a, np.float64) - exact[k]).max(initial=0.0)) / scales[k]

    noise = max((error(run[k].double().numpy(), k) for run in runs for k in range(len(exact)) if scales[k]),
                default=0.0)
    bad = {}
    for k, (name, a, want) in enumerate(zip(names, ours, runs[0], strict=False)):
        if scales[k] is None:
            if not np.array_equal(a, want.numpy()):
                bad[name] = (float("inf"), 0.0)
            continue
        bound = SLACK * noise + TOLERANCE.get(str(want.dtype).replace("torch.", ""), 1e-2)
        if not error(a, k) <= bound:  # (NaN fails)
            bad[name] = (error(a, k), bound)
    return bad


def _scaled(args, size: float, seed: int) -> list:
    """Floating tensors times (1 + u size), u uniform in [-1, 1) (seeded): signs and zeros kept."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    return [a * (1 + (torch.rand(a.shape, generator=gen, dtype=torch.float64) * 2 - 1).to(a.dtype) * size)
            if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args]


def _jittered(args, seed: int) -> list:
    """Floating tensors moved by a few ulps of their dtype (_scaled by 4 eps)."""
    import torch

    eps = max((torch.finfo(a.dtype).eps for a in args if isinstance(a, torch.Tensor) and a.is_floating_point()),
              default=0.0)
    return _scaled(args, 4 * eps, seed)


def _perturbed(args, seed: int = 0) -> list:
    """Floating tensors times (1 + u / 256), u uniform in [-1, 1): signs and zeros kept, every kink moved."""
    return _scaled(args, 1 / 256, seed)


def _modules(fn, depth: int = 3) -> list:
    """The torch modules fn runs, as far as they can be found: fn itself, a functools.partial's function and
    arguments, a function's closure cells (export_training_step's step closes over its module), to `depth` levels."""
    import torch

    found, todo = {}, [(fn, 0)]
    while todo:
        value, level = todo.pop()
        if isinstance(value, torch.nn.Module):
            found.setdefault(id(value), value)
        elif level < depth and isinstance(value, functools.partial):
            todo += [(v, level + 1) for v in (value.func, *value.args, *value.keywords.values())]
        elif level < depth and callable(value) and getattr(value, "__closure__", None):
            for cell in value.__closure__:
                try:
                    todo.append((cell.cell_contents, level + 1))
                except ValueError:  # (an empty cell)
                    continue
    return list(found.values())


@contextlib.contextmanager
def _in_double(modules):
    """modules with their floating parameters and buffers in float64 inside the block; afterwards the very same
    parameter objects hold their old data again, and the old buffer objects are back."""
    import torch

    saved = [(m, {n: (p, p.data, p.grad, None if p.grad is None else p.grad.data)
                  for n, p in m._parameters.items() if p is not None}, dict(m._buffers))
             for module in modules for m in module.modules()]
    try:
        for module in modules:
            module.to(torch.float64)
        for m, _, buffers in saved:  # (integer buffers stay the same objects: the run updates copies of them)
            m._buffers.update({n: b.clone() for n, b in m._buffers.items() if b is not None and b is buffers[n]})
        yield
    finally:
        for m, params, buffers in saved:
            for name, (p, data, grad, grad_data) in params.items():
                p.data = data
                if grad is not None:  # Module.to converts .grad's data in place
                    grad.data = grad_data
                p.grad = grad
                m._parameters[name] = p
            m._buffers.clear()
            m._buffers.update(buffers)


def _torch_outputs(fn, point) -> list:
    import torch

    results = fn(*[a.clone() if isinstance(a, torch.Tensor) else a for a in point])
    return [t.detach() for t in torch.utils._pytree.tree_leaves(results) if isinstance(t, torch.Tensor)]


def _in_float64(fn, point):
    """fn's outputs at point with fn's modules and point's floating tensors in float64; None when fn cannot run
    so (an op without a float64 kernel, a tensor of fixed dtype made inside fn)."""
    import torch

    doubled = [a.detach().double().requires_grad_(a.requires_grad)
               if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in point]
    try:
        with _in_double(_modules(fn)):
            return _torch_outputs(fn, doubled)
    except (RuntimeError, TypeError, ValueError, NotImplementedError):
        return None


def _verify(model: onnx.ModelProto, fn, args) -> None:
    """One onnxruntime run of model (native kernels when the library is there, else the functions) against fn run
    by torch on the example args in float64, and in the args' dtype at them and at JITTERS points a few ulps away:
    VerificationError when an output's error to the float64 result is well beyond the errors of torch's own runs
    (see SLACK). When fn cannot run in float64, torch's run at the args in their dtype is the reference.

    A kink (a ReLU or max input that rounding puts on the other side in one of the runs) changes some gradients by
    a finite amount without any fault; torch's jittered runs show how much. When onnxruntime alone hits one (torch's
    runs did not), the disagreement is checked again at a perturbed point
    (every floating input times 1 + u/256): a kink is an accident of one point and moves away, a wrong translation
    (a wrong scale, an ignored argument) disagrees there too, and only that raises. A model with random ops
    (dropout with p > 0) cannot reproduce torch's draws and is not verified.
    """
    import torch

    from resample_grad import runtime

    if any(node.op_type in RANDOM_OPS for node in model.graph.node):
        return
    onnxruntime = runtime.require_onnxruntime()
    try:
        session = runtime.session(model)
    except Exception:  # no native library (a source tree without the build): the functions attached to the model
        session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    inputs = [i.name for i in session.get_inputs()]

    def compare(point):
        runs = [_torch_outputs(fn, p) for p in [point, *(_jittered(point, seed) for seed in range(JITTERS))]]
        exact = _in_float64(fn, point)
        tensors = [a for a in point if isinstance(a, torch.Tensor)]
        feeds = {name: _numpy(a) for name, a in zip(inputs, tensors, strict=False)}
        ours = runtime.run(session, feeds)
        if len(ours) != len(runs[0]):
            raise VerificationError(f"export: the model has {len(ours)} outputs, torch's function {len(runs[0])}")
        return _errors(ours, runs, runs[0] if exact is None or len(exact) != len(ours) else exact, names)

    bad = compare(args)
    if not bad:
        return
    again = compare(_perturbed(args))
    if again:
        name = next(iter(again))
        error, bound = bad.get(name, again[name])
        raise VerificationError(
            f"export: output {name!r} disagrees with torch on the example inputs: max |onnxruntime - torch in "
            f"float64| / scale = {error:.3g} > {bound:.3g} ({SLACK} times the largest error of torch's own runs "
            f"in the model's dtype, plus a floor), and again at a perturbed point (not a kink): a wrong translation"
            + (f"; also {sorted(set(again) - {name})}" if len(again) > 1 else "")
            + ". export(..., verify=False) skips this check")


def _optimize(model) -> None:
    """onnxscript's optimize_ir (what torch.onnx.export runs) without its pattern rewriter, in place on an ir.Model:
    inlining, constant folding, removal of unused nodes, lifting and deduplication of constants, common
    subexpressions. The rewriter's rules fuse inference patterns (Pad into Conv, batch norm into Conv, Min/Max into
    Clip, ...) that a training graph hardly has, and its matching took most of the export time of large steps
    (two thirds of a 5-level U-Net's); onnxruntime fuses what it can itself."""
    import onnx_ir as ir
    import onnx_ir.passes.common as common
    from onnxscript.optimizer import _constant_folding as folding

    fold = folding.FoldConstantsPass(shape_inference=True,
                                     input_size_limit=folding.DEFAULT_CONSTANT_FOLD_INPUT_SIZE_LIMIT,
                                     output_size_limit=folding.DEFAULT_CONSTANT_FOLD_OUTPUT_SIZE_LIMIT)
    ir.passes.Sequential(
        common.InlinePass(),
        ir.passes.PassManager([fold, common.RemoveUnusedNodesPass(), common.RemoveUnusedFunctionsPass(),
                               common.RemoveUnusedOpsetsPass()], steps=2, early_stop=True),
        common.RemoveUnusedNodesPass(),
        common.LiftConstantsToInitializersPass(lift_all_constants=True, size_limit=0),
        common.LiftSubgraphInitializersToMainGraphPass(),
        common.DeduplicateInitializersPass(),
        common.CommonSubexpressionEliminationPass(),
        common.OutputFixPass(),
        common.NameFixPass(),
    )(model)


@contextlib.contextmanager
def _without_torchvision_notes():
    """torch's exporter builds its registry from onnxscript's torchlib on every export, and where torchvision is
    not installed it logs a warning for each torchvision op torchlib has ("torchvision is not installed. Skipping
    torchvision::nms", four lines): those lines are dropped inside the block (nothing here needs torchvision), every
    other record of that logger passes."""
    import logging

    def keep(record):
        return not str(record.msg).startswith("torchvision is not installed")

    logger = logging.getLogger("torch.onnx._internal.exporter._registration")
    logger.addFilter(keep)
    try:
        yield
    finally:
        logger.removeFilter(keep)


class _Progress:
    """`export: <phase>` lines with the time each phase took, on stderr when it is a terminal."""

    def __init__(self):
        import sys
        import time

        self.clock, self.stream = time.perf_counter, sys.stderr
        self.on = bool(getattr(sys.stderr, "isatty", lambda: False)())
        self.phase, self.start = None, self.clock()

    def __call__(self, phase=None):
        now = self.clock()
        if self.on and self.phase:
            print(f"export: {self.phase} ({now - self.start:.1f} s)", file=self.stream, flush=True)
        if self.on and phase:
            print(f"export: {phase} ...", file=self.stream, flush=True)
        self.phase, self.start = phase, now


def export(fn_or_module, args, path=None, *, verify: bool = True, **kwargs) -> onnx.ModelProto:
    """torch.onnx.export of trace(fn, args) (as the ExportedProgram of _program(), which the exporter does not
    capture again) with torch_translation_table(), then attach(): the model runs in onnxruntime with or without the
    native library. Saved to path when given.

    A module is traced like a function, on a copy (its buffers stay as they are). The ONNX opset is 18 (the one
    Ascend ATC reads, and the project's functions'), unless kwargs give opset_version; other kwargs (input_names,
    output_names, ...) go to torch.onnx.export. verify (default True): verify() the model against fn on args
    before it is returned or saved.
    """
    import copy

    import torch

    module = isinstance(fn_or_module, torch.nn.Module)
    fn = copy.deepcopy(fn_or_module) if module else fn_or_module
    reference = copy.deepcopy(fn_or_module) if module and verify else fn  # (tracing runs fn: train-mode updates)
    progress = _Progress()
    progress("tracing")
    graph = trace(fn, list(args)).eval()  # (explicit aten ops: nothing in it depends on the mode; silences a warning)
    progress("torch.onnx.export")
    kwargs.setdefault("opset_version", 18)
    kwargs.setdefault("verbose", False)
    optimize = kwargs.pop("optimize", True)
    with _without_torchvision_notes():
        program = torch.onnx.export(_program(graph, args) or graph, tuple(args), dynamo=True,
                                    custom_translation_table=torch_translation_table(), optimize=False, **kwargs)
    if optimize:
        progress("optimizing")
        _optimize(program.model)
    progress("attaching the functions")
    model = program.model_proto  # a property that serializes anew on each access: one copy
    del model.graph.value_info[:]  # the exporter's shape hints can be wrong after its optimizer; attach() infers anew
    _unname_unused_outputs(model)
    _spelled_out(model)
    model = opset.attach(model)
    if verify:
        progress("verifying against torch")
        _verify(model, reference, list(args))
    progress()
    if path is not None:
        onnx.save(model, str(path))
    return model


# --------------------------------------------------------------------------- training step

def _tensors(value, what: str) -> tuple:
    import torch

    values = (value,) if isinstance(value, torch.Tensor) else tuple(value)
    for k, v in enumerate(values):
        if not isinstance(v, torch.Tensor):
            raise TypeError(f"export_training_step: {what} must be tensors, got {type(v).__name__} at position {k}")
    return values


def export_training_step(module, loss_fn, inputs, targets=(), path=None, *, optimizer=None,
                         input_gradients: bool = False, **kwargs) -> onnx.ModelProto:
    """One training step of module as an ONNX model (export() of it): loss = loss_fn(module(*inputs), *targets).

    Graph inputs: input_0, ..., target_0, ..., then every trainable parameter and every buffer, named as in
    module.named_parameters() / named_buffers(), then (with an optimizer) its state (torch_optim.py: the slots of
    each parameter, optimizer.step, optimizer.learning_rate).
    Graph outputs without an optimizer: loss, grad_<parameter> for each trainable parameter, grad_input_<k> for each
    input when input_gradients, and <buffer>_updated for each buffer the step changes (BatchNorm's running
    statistics), so an optimizer outside feeds the updated values back.
    With optimizer (a torch.optim SGD, Adam or AdamW over the module's trainable parameters) the step updates them
    itself. Outputs: loss, <parameter>_updated, grad_input_<k> when input_gradients, <buffer>_updated, and
    <state>_updated for each optimizer state but the learning rate. The inputs get the current values (module,
    optimizer) as initializers, and the eval-mode forward (input_k -> output_k with the parameters and buffers)
    is kept as the model-local function resample_grad.training::inference, from which resample_grad.training.Trainer
    writes an inference model with the trained weights. The optimizer's param group and state are read, not changed.
    Frozen parameters (requires_grad False) stay constants of the graph. inputs and targets: a tensor or a tuple.
    verify (a keyword argument, default True): the step is checked against torch autograd's (see export()).
    """
    import copy

    import torch
    from torch.func import functional_call, grad_and_value

    from . import torch_optim

    if not isinstance(module, torch.nn.Module):
        raise TypeError(f"export_training_step: module must be a torch.nn.Module, got {type(module).__name__}")
    if not callable(loss_fn):
        raise TypeError(f"export_training_step: loss_fn must be callable (output, *targets) -> scalar loss, "
                        f"got {type(loss_fn).__name__}")
    inputs, targets = _tensors(inputs, "inputs"), _tensors(targets, "targets")
    trainable = {n: p for n, p in module.named_parameters() if p.requires_grad}
    params = {n: p.detach() for n, p in trainable.items()}
    if not params:
        raise ValueError(f"export_training_step: module {type(module).__name__} has no trainable parameters "
                         "(none with requires_grad); expected at least one to differentiate")
    buffers = {n: b.detach() for n, b in module.named_buffers()}
    plan = None if optimizer is None else torch_optim.optimizer_plan(optimizer, trainable)
    state = {} if plan is None else plan.initial_state(params)
    pnames, bnames, snames = list(params), list(buffers), list(state)
    traced = copy.deepcopy(module)  # the step runs a copy: the export (its float64 check) never touches the caller's
    for param in traced.parameters():
        param.grad = None

    def loss_of(params, xs, buffers, ts):
        loss = loss_fn(functional_call(traced, (params, buffers), tuple(xs)), *ts)
        if not isinstance(loss, torch.Tensor) or loss.dim() != 0 or not loss.is_floating_point():
            got = (f"a tensor of shape {list(loss.shape)} and dtype {loss.dtype}" if isinstance(loss, torch.Tensor)
                   else type(loss).__name__)
            raise ValueError(f"export_training_step: loss_fn must return a scalar floating-point tensor, got {got}")
        return loss

    def step(*flat, updated=None):
        xs, rest = flat[:len(inputs)], flat[len(inputs):]
        ts, rest = rest[:len(targets)], rest[len(targets):]
        p, rest = dict(zip(pnames, rest[:len(pnames)], strict=True)), rest[len(pnames):]
        b, s = dict(zip(bnames, rest[:len(bnames)], strict=True)), dict(zip(snames, rest[len(bnames):], strict=True))
        grads, loss = grad_and_value(loss_of, argnums=(0, 1) if input_gradients else 0)(p, xs, b, ts)
        grads, grad_xs = grads if input_gradients else (grads, ())
        kept = tuple(b[n] for n in (updated or ()))
        if plan is None:
            return (loss, *(grads[n] for n in pnames), *grad_xs, *kept)
        new_params, new_state = plan.update(p, grads, s)
        return (loss, *(new_params[n] for n in pnames), *grad_xs, *kept, *new_state.values())

    # one eager step on copies: checks loss_fn, and finds the buffers the step updates in place (by value: batch
    # norm's kernel writes its running statistics without bumping their version counters)
    copies = [b.clone() for b in buffers.values()]
    _under(_refusing, step)(*inputs, *targets, *params.values(), *copies, *state.values())
    updated = [n for n, before, after in zip(bnames, buffers.values(), copies, strict=True)
               if not torch.equal(before, after)]

    grad_inputs = [f"grad_input_{k}" for k in range(len(inputs) if input_gradients else 0)]
    changed = [f"{n}{UPDATED}" for n in pnames] if plan else [f"grad_{n}" for n in pnames]
    names = dict(input_names=[*(f"input_{k}" for k in range(len(inputs))),
                              *(f"target_{k}" for k in range(len(targets))), *pnames, *bnames, *snames],
                 output_names=["loss", *changed, *grad_inputs, *(f"{n}{UPDATED}" for n in updated),
                               *(f"{n}{UPDATED}" for n in snames if n != LEARNING_RATE_INPUT)])
    values = [*params.values(), *buffers.values(), *state.values()]
    model = export(functools.partial(step, updated=updated), [*inputs, *targets, *values], None, **names, **kwargs)
    if plan is not None:
        model.graph.initializer.extend(onnx.numpy_helper.from_array(_numpy(v), n)
                                       for n, v in zip([*pnames, *bnames, *snames], values, strict=True))
        _keep_inference(model, module, inputs, params, buffers, kwargs.get("verify", True))
    if path is not None:
        onnx.save(model, str(path))
    return model


def _keep_inference(model: onnx.ModelProto, module, inputs, params: dict, buffers: dict, verify: bool) -> None:
    """Adds to model the eval-mode forward of module as the function INFERENCE_DOMAIN::INFERENCE_FUNCTION: inputs
    input_k, the parameters and the buffers by name; outputs output_k; the forward's constants as Constant nodes."""
    import copy

    import torch
    from torch.func import functional_call

    evaluated = copy.deepcopy(module).eval()
    pnames, bnames = list(params), list(buffers)

    def forward(*flat):
        xs, rest = flat[:len(inputs)], flat[len(inputs):]
        state = (dict(zip(pnames, rest[:len(pnames)], strict=True)), dict(zip(bnames, rest[len(pnames):], strict=True)))
        return functional_call(evaluated, state, tuple(xs))

    args = [*inputs, *params.values(), *buffers.values()]
    with torch.no_grad():
        count = len([t for t in torch.utils._pytree.tree_leaves(forward(*args)) if isinstance(t, torch.Tensor)])
    names = [*(f"input_{k}" for k in range(len(inputs))), *pnames, *bnames]
    inference = export(forward, args, None, verify=verify, input_names=names,
                       output_names=[f"output_{k}" for k in range(count)])
    graph = inference.graph
    constants = [onnx.helper.make_node("Constant", [], [t.name], value=t) for t in graph.initializer
                 if t.name not in names]
    function = onnx.helper.make_function(INFERENCE_DOMAIN, INFERENCE_FUNCTION, [i.name for i in graph.input],
                                         [o.name for o in graph.output], [*constants, *graph.node],
                                         list(inference.opset_import))
    have = {(f.domain, f.name, f.overload) for f in model.functions}
    model.functions.extend(f for f in inference.functions if (f.domain, f.name, f.overload) not in have)
    model.functions.append(function)
