"""Standard-ONNX translations of the aten ops of vision training steps that torch's exporter lacks or gets wrong.

torch 2.13's exporter (onnxscript 0.7.2's torchlib plus torch's decompositions) has no translation for
convolution_backward, the average-pool and 3-D max-pool backward ops, the replication-pad backward ops,
_adaptive_avg_pool3d or the 5-D grid_sampler_3d, it translates aten.copy (no broadcast) and
avg_pool{2,3}d (divisor_override ignored) wrongly, and a grouped transposed convolution as a grouped
ConvTranspose, which IREE does not compile. Each function below implements one aten overload,
named in its docstring; torch_export.torch_translation_table() merges TRANSLATIONS into the table
converters.export uses. Opset 18 ops only, so a model stays readable by Ascend ATC.

onnxruntime's CPU provider has no float64 Conv, ConvTranspose or AveragePool: convolution_backward
picks its formulation by dtype (Conv / ConvTranspose below float64, im2col with Gather, MatMul and
ScatterElements for float64), and the pooling ops use constant sparse maps, which run in every dtype.
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np
import onnx_ir as ir
from onnx import numpy_helper
from onnxscript import opset18 as op


def _ints(values) -> list:
    return [int(v) for v in values]


def _const(values):
    return op.Constant(value_ints=_ints(values))


def _array(values, dtype):
    return op.Constant(value=numpy_helper.from_array(np.asarray(values, dtype)))


def _per_axis(values, rank: int) -> list:
    """An aten int[] argument for `rank` spatial axes (a single value applies to all)."""
    values = _ints(values)
    return values * rank if len(values) == 1 else values


def _zeros(like, shape):
    return op.Expand(op.CastLike(op.Constant(value_float=0.0), like), _const(shape))


def _unused():
    """A masked-off output: nothing reads it and the exporter's optimizer removes it (None is not accepted)."""
    return op.Constant(value_float=0.0)


def _flat_index(shape, positions: np.ndarray) -> np.ndarray:
    """Row-major flat indices of integer positions [T, rank] in a spatial shape."""
    strides = np.cumprod([1] + _ints(shape)[::-1])[:-1][::-1]
    return positions @ strides


def _sparse_map(t, shape_in, shape_out, source, target, weights=None):
    """out[n, c, target[j]] += weights[j] * t[n, c, source[j]]: a fixed sparse linear map between the spatial
    shapes (flat indices), as Gather, Mul and ScatterElements(add). Weights are kept in float64 and cast to t's
    dtype."""
    n, c = shape_in[:2]
    count = len(source)
    values = op.Gather(op.Reshape(t, _const([n, c, math.prod(shape_in[2:])])), _array(source, np.int64), axis=2)
    if weights is not None:
        values = op.Mul(values, op.CastLike(_array(weights, np.float64), t))
    index = op.Expand(_array(np.reshape(target, (1, 1, count)), np.int64), _const([n, c, count]))
    out = op.ScatterElements(_zeros(t, [n, c, math.prod(shape_out)]), index, values, axis=2, reduction="add")
    return op.Reshape(out, _const([n, c, *shape_out]))


# --------------------------------------------------------------------------- convolution

# kernels of more taps (3-D ones) take _conv_weight_grad's one Conv: the tap form's nodes (5 per tap) grow the
# graph faster than the work they save
TAP_LIMIT = 25


def _conv_weight_grad_taps(signal, grad, signal_shape, grad_shape, kernel, stride, padding, dilation, groups):
    """dL/dw of y = conv(signal, w) as one MatMul per kernel tap k: dw[:, :, k] = grad [Cout, N O] times the signal
    window that tap reads (a strided Slice of the padded signal) transposed, per group. The GEMMs reduce over batch
    and positions at once; _conv_weight_grad's Conv, whose kernel is the whole gradient image, is slower in
    onnxruntime (it re-reads that kernel for every input channel). Batch goes behind channels (whole planes move,
    a cheap Transpose), and onnxruntime fuses each window's Transpose into its MatMul."""
    rank = len(kernel)
    n, g = signal_shape[0], groups
    csg, cgg = signal_shape[1] // g, grad_shape[1] // g
    out = grad_shape[2:]
    positions = n * math.prod(out)
    if any(padding):
        signal = op.Pad(signal, _const([0, 0, *padding, 0, 0, *padding]))
    padded = [s + 2 * p for s, p in zip(signal_shape[2:], padding, strict=False)]
    spatial = list(range(3, 3 + rank))
    signal = op.Transpose(op.Reshape(signal, _const([n, g, csg, *padded])), perm=[1, 2, 0, *spatial])  # [g, c, N, *P]
    grad = op.Reshape(op.Transpose(op.Reshape(grad, _const([n, g, cgg, *out])), perm=[1, 2, 0, *spatial]),
                      _const([g, cgg, positions]))
    axes, steps, flat = _const(spatial), _const(stride), _const([g, csg, positions])
    taps = []
    for tap in itertools.product(*map(range, kernel)):
        begin = [k * d for k, d in zip(tap, dilation, strict=False)]
        ends = [b + (o - 1) * s + 1 for b, o, s in zip(begin, out, stride, strict=True)]
        window = op.Slice(signal, _const(begin), _const(ends),
                          axes, steps)
        taps.append(op.MatMul(grad, op.Transpose(op.Reshape(window, flat), perm=[0, 2, 1])))  # [g, cgg, csg]
    gw = op.Reshape(op.Concat(*taps, axis=2), _const([g, cgg, len(taps), csg]))
    return op.Reshape(op.Transpose(gw, perm=[0, 1, 3, 2]), _const([g * cgg, csg, *kernel]))


def _conv_weight_grad(signal, grad, signal_shape, grad_shape, kernel, stride, padding, dilation, groups):
    """dL/dw of y = conv(signal, w), w [Cout, Cin/g, *K], grad = dL/dy: per group, a convolution of the signal
    (batch and channels swapped) by the gradient (batch and channels swapped), with stride and dilation
    exchanged; its first K taps, channels back in weight order."""
    rank = len(kernel)
    n, cin, cout = signal_shape[0], signal_shape[1], grad_shape[1]
    cig, cog = cin // groups, cout // groups
    spatial = [3 + i for i in range(rank)]
    x = op.Transpose(op.Reshape(signal, _const([n, groups, cig, *signal_shape[2:]])), perm=[2, 1, 0, *spatial])
    x = op.Reshape(x, _const([cig, groups * n, *signal_shape[2:]]))
    w = op.Transpose(op.Reshape(grad, _const([n, groups, cog, *grad_shape[2:]])), perm=[1, 2, 0, *spatial])
    w = op.Reshape(w, _const([cout, n, *grad_shape[2:]]))
    gw = op.Conv(x, w, strides=dilation, dilations=stride, pads=padding * 2, group=groups)  # [cig, Cout, *K' >= K]
    gw = op.Slice(gw, _const([0] * rank), _const(kernel), _const(range(2, 2 + rank)))
    return op.Transpose(gw, perm=[1, 0, *range(2, 2 + rank)])


def _conv_transpose(grad_output, weight, groups: int, **attributes):
    """ConvTranspose(grad_output, weight) of a grouped convolution as one ConvTranspose of group 1 per group (a Split
    of the channels and of the weight, then a Concat): IREE does not compile a ConvTranspose with group > 1
    (tests/portable/test_runtime_bugs.py)."""
    if groups == 1:
        return op.ConvTranspose(grad_output, weight, **attributes)
    parts = zip(op.Split(grad_output, axis=1, num_outputs=groups), op.Split(weight, axis=0, num_outputs=groups),
                strict=True)
    return op.Concat(*(op.ConvTranspose(gy, w, **attributes) for gy, w in parts), axis=1)


def _conv_backward_conv(grad_output, input, weight, shapes, stride, padding, dilation, transposed, groups, mask):
    """Conv / ConvTranspose form (float32, float16, bfloat16)."""
    go_shape, x_shape, w_shape = shapes
    rank = len(x_shape) - 2
    kernel = w_shape[2:]
    grads = [_unused(), _unused()]
    if mask[0] and not transposed:
        # ConvTranspose's output length (O-1)s - 2p + d(K-1) + 1 + output_padding must be the input's: output_padding
        # recovers what the forward's floor division dropped, always in [0, s)
        extra = [x_shape[2 + i]
                 - ((go_shape[2 + i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (kernel[i] - 1) + 1)
                 for i in range(rank)]
        grads[0] = _conv_transpose(grad_output, weight, groups, strides=stride, pads=padding * 2,
                                   dilations=dilation, output_padding=extra)
    elif mask[0]:  # the forward was a transposed convolution: its input gradient is a convolution
        gi = op.Conv(grad_output, weight, strides=stride, pads=padding * 2, dilations=dilation, group=groups)
        grads[0] = op.Slice(gi, _const([0] * rank), _const(x_shape[2:]), _const(range(2, 2 + rank)))
    weight_grad = _conv_weight_grad_taps if math.prod(kernel) <= TAP_LIMIT else _conv_weight_grad
    if mask[1] and not transposed:
        grads[1] = weight_grad(input, grad_output, x_shape, go_shape, kernel, stride, padding, dilation, groups)
    elif mask[1]:  # y[n, co, i s + k d - p] += x[n, ci, i] w[ci, co, k]: the same sum with x and y exchanged
        grads[1] = weight_grad(grad_output, input, go_shape, x_shape, kernel, stride, padding, dilation, groups)
    return grads


def _im2col_index(signal_shape, kernel, stride, padding, dilation, out_shape):
    """[K, O] flat indices into the zero-padded signal read by output position o through tap k, and its padded shape."""
    padded = [s + 2 * p for s, p in zip(signal_shape, padding, strict=False)]
    outs = np.array(list(itertools.product(*map(range, out_shape))), np.int64).reshape(-1, len(out_shape))
    taps = np.array(list(itertools.product(*map(range, kernel))), np.int64).reshape(-1, len(kernel))
    positions = outs[None] * np.array(stride) + taps[:, None] * np.array(dilation)  # [K, O, rank]
    return _flat_index(padded, positions.reshape(-1, len(kernel))).reshape(len(taps), len(outs)), padded


def _im2col(t, shape, index, padded, padding):
    """t [N, C, *I] -> columns [N, C, K, O]."""
    n, c = shape[:2]
    t = op.Pad(t, _const([0, 0, *padding, 0, 0, *padding]))
    return op.Gather(op.Reshape(t, _const([n, c, math.prod(padded)])), _array(index, np.int64), axis=2)


def _col2im(columns, shape, index, padded, padding):
    """columns [N, C, K, O] summed back onto [N, C, *I] (the adjoint of _im2col)."""
    n, c = shape[:2]
    values = op.Reshape(columns, _const([n, c, index.size]))
    where = op.Expand(_array(index.reshape(1, 1, -1), np.int64), _const([n, c, index.size]))
    out = op.ScatterElements(_zeros(columns, [n, c, math.prod(padded)]), where, values, axis=2, reduction="add")
    out = op.Reshape(out, _const([n, c, *padded]))
    return op.Slice(out, _const(padding), _const([p + s for p, s in zip(padding, shape[2:], strict=False)]),
                    _const(range(2, 2 + len(padding))))


def _conv_backward_im2col(grad_output, input, weight, shapes, stride, padding, dilation, transposed, groups, mask):
    """Gather (im2col), grouped MatMul and ScatterElements (col2im) form: every op has a float64 CPU kernel.
    A transposed convolution y = conv_transpose(x, w) is the adjoint of x = conv(y, w): the columns come from y."""
    go_shape, x_shape, w_shape = shapes
    kernel, g = w_shape[2:], groups
    n, taps = x_shape[0], math.prod(kernel)
    # the convolution as conv(signal, w) -> image, w [image channels, signal channels / g, K]
    signal, image, signal_shape, image_shape = ((grad_output, input, go_shape, x_shape) if transposed
                                                else (input, grad_output, x_shape, go_shape))
    cs, ci, points = signal_shape[1] // g, image_shape[1] // g, math.prod(image_shape[2:])
    index, padded = _im2col_index(signal_shape[2:], kernel, stride, padding, dilation, image_shape[2:])
    image = op.Reshape(image, _const([n, g, ci, points]))
    w = op.Reshape(weight, _const([g, ci, cs * taps]))  # conv(y, w) reads w [Cin, Cout/g, K] as [g, Cin/g, Cout/g K]
    grads = [_unused(), _unused()]
    if mask[1]:
        columns = op.Reshape(_im2col(signal, signal_shape, index, padded, padding), _const([n, g, cs * taps, points]))
        gw = op.ReduceSum(op.MatMul(image, op.Transpose(columns, perm=[0, 1, 3, 2])), _const([0]), keepdims=0)
        grads[1] = op.Reshape(gw, _const(w_shape))
    if mask[0] and transposed:  # gx[n, ci, o] = sum_{cs, k} w[ci, cs, k] y[n, cs, o s + k d - p]
        columns = op.Reshape(_im2col(signal, signal_shape, index, padded, padding), _const([n, g, cs * taps, points]))
        grads[0] = op.Reshape(op.MatMul(w, columns), _const(x_shape))
    elif mask[0]:  # gx = col2im(w^T gy)
        columns = op.MatMul(op.Transpose(w, perm=[0, 2, 1]), image)  # [N, g, cs K, O]
        grads[0] = _col2im(op.Reshape(columns, _const([n, g * cs, taps, points])), signal_shape, index, padded, padding)
    return grads


def aten_convolution_backward(grad_output, input, weight, bias_sizes: Sequence[int] | None, stride: Sequence[int],
                              padding: Sequence[int], dilation: Sequence[int], transposed: bool,
                              output_padding: Sequence[int], groups: int, output_mask: Sequence[bool]):
    """convolution_backward(Tensor grad_output, Tensor input, Tensor weight, SymInt[]? bias_sizes, SymInt[] stride,
    SymInt[] padding, SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups,
    bool[3] output_mask) -> (Tensor, Tensor, Tensor)

    1-, 2- and 3-D. An output whose output_mask is False costs nothing (a placeholder nobody reads).
    output_padding needs no argument of its own: the shapes of input and grad_output carry it.
    """
    shapes = _ints(grad_output.shape), _ints(input.shape), _ints(weight.shape)
    rank = len(shapes[1]) - 2
    stride, padding, dilation = (_per_axis(v, rank) for v in (stride, padding, dilation))
    form = _conv_backward_im2col if grad_output.dtype == ir.DataType.DOUBLE else _conv_backward_conv
    grads = form(grad_output, input, weight, shapes, stride, padding, dilation, bool(transposed), int(groups),
                 [bool(m) for m in output_mask])
    bias = op.ReduceSum(grad_output, _const([0, *range(2, 2 + rank)]), keepdims=0) if output_mask[2] else _unused()
    return grads[0], grads[1], bias


def aten_convolution(input, weight, bias, stride: Sequence[int], padding: Sequence[int], dilation: Sequence[int],
                     transposed: bool, output_padding: Sequence[int], groups: int):
    """convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding, SymInt[] dilation,
    bool transposed, SymInt[] output_padding, SymInt groups) -> Tensor

    torchlib's own, but a transposed convolution with groups > 1: one ConvTranspose of group 1 per group (IREE
    does not compile a grouped ConvTranspose), then the bias.
    """
    if not transposed or groups == 1:
        from onnxscript.function_libs.torch_lib.ops import core as torchlib

        return torchlib.aten_convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
                                         groups)
    rank = len(input.shape) - 2
    stride, padding, dilation, output_padding = (_per_axis(v, rank) for v in (stride, padding, dilation,
                                                                              output_padding))
    y = _conv_transpose(input, weight, int(groups), strides=stride, pads=padding * 2, dilations=dilation,
                        output_padding=output_padding)
    return y if bias is None else op.Add(y, op.Reshape(bias, _const([-1, *[1] * rank])))


# --------------------------------------------------------------------------- pooling and padding

def _pool_args(kernel_size, stride, padding, rank):
    kernel = _per_axis(kernel_size, rank)
    return kernel, _per_axis(stride, rank) if len(stride) else kernel, _per_axis(padding, rank)


def _avg_pool_map(in_shape, out_shape, kernel, stride, padding, count_include_pad, divisor_override):
    """(input index, output index, weight) of every tap of torch's avg_pool (AvgPoolKernel.cpp's window rules)."""
    source, target, weights = [], [], []
    for o in itertools.product(*map(range, out_shape)):
        start = [o[d] * stride[d] - padding[d] for d in range(len(o))]
        end = [min(start[d] + kernel[d], in_shape[d] + padding[d]) for d in range(len(o))]
        lo, hi = [max(s, 0) for s in start], [min(e, i) for e, i in zip(end, in_shape, strict=False)]
        divisor = divisor_override or math.prod(
            (e - s) for s, e in (zip(start, end, strict=False) if count_include_pad else zip(lo, hi, strict=False)))
        for i in itertools.product(*itertools.starmap(range, zip(lo, hi, strict=False))):
            source.append(i), target.append(o), weights.append(1.0 / divisor)
    return _flat_pairs(in_shape, out_shape, source, target), weights


def _adaptive_map(in_shape, out_shape):
    """(input index, output index, weight) of adaptive average pooling: window [floor(o I / O), ceil((o + 1) I / O))."""
    source, target, weights = [], [], []
    for o in itertools.product(*map(range, out_shape)):
        lo = [o[d] * in_shape[d] // out_shape[d] for d in range(len(o))]
        hi = [-(-(o[d] + 1) * in_shape[d] // out_shape[d]) for d in range(len(o))]
        for i in itertools.product(*itertools.starmap(range, zip(lo, hi, strict=False))):
            window = math.prod(high - low for low, high in zip(lo, hi, strict=True))
            source.append(i), target.append(o), weights.append(1.0 / window)
    return _flat_pairs(in_shape, out_shape, source, target), weights


def _flat_pairs(in_shape, out_shape, source, target):
    rank = len(in_shape)
    return (_flat_index(in_shape, np.array(source, np.int64).reshape(-1, rank)),
            _flat_index(out_shape, np.array(target, np.int64).reshape(-1, rank)))


def aten_avg_pool_backward(grad_output, self, kernel_size: Sequence[int], stride: Sequence[int],
                           padding: Sequence[int], ceil_mode: bool, count_include_pad: bool,
                           divisor_override: int | None = None):
    """avg_pool2d_backward(Tensor grad_output, Tensor self, int[2] kernel_size, int[2] stride, int[2] padding,
    bool ceil_mode, bool count_include_pad, int? divisor_override) -> Tensor
    avg_pool3d_backward(Tensor grad_output, Tensor self, int[3] kernel_size, int[3] stride, int[3] padding,
    bool ceil_mode, bool count_include_pad, int? divisor_override) -> Tensor

    (F.avg_pool1d runs as avg_pool2d.) ceil_mode shows in grad_output's shape, which fixes the windows.
    """
    go_shape, x_shape = _ints(grad_output.shape), _ints(self.shape)
    kernel, stride, padding = _pool_args(kernel_size, stride, padding, len(x_shape) - 2)
    (source, target), weights = _avg_pool_map(x_shape[2:], go_shape[2:], kernel, stride, padding,
                                              count_include_pad, divisor_override)
    return _sparse_map(grad_output, go_shape, x_shape[2:], target, source, weights)


def aten_avg_pool(self, kernel_size: Sequence[int], stride: Sequence[int] = (), padding: Sequence[int] = (0,),
                  ceil_mode: bool = False, count_include_pad: bool = True, divisor_override: int | None = None):
    """avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, bool ceil_mode=False,
    bool count_include_pad=True, int? divisor_override=None) -> Tensor
    avg_pool3d(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, bool ceil_mode=False,
    bool count_include_pad=True, int? divisor_override=None) -> Tensor

    torchlib's translation ignores divisor_override, and onnxruntime has no float64 AveragePool: with either,
    a sparse map; otherwise torchlib's own.
    """
    x_shape = _ints(self.shape)
    rank = len(x_shape) - 2
    if not divisor_override and self.dtype != ir.DataType.DOUBLE:  # torchlib's AveragePool
        from onnxscript.function_libs.torch_lib.ops import nn as torchlib

        pool = torchlib.aten_avg_pool2d if rank == 2 else torchlib.aten_avg_pool3d
        return pool(self, kernel_size, stride, padding, ceil_mode, count_include_pad)
    kernel, stride, padding = _pool_args(kernel_size, stride, padding, rank)
    out_shape = []
    for size, k, s, p in zip(x_shape[2:], kernel, stride, padding, strict=False):
        length = (size + 2 * p - k + (s - 1 if ceil_mode else 0)) // s + 1
        out_shape.append(length - 1 if ceil_mode and (length - 1) * s >= size + p else length)  # pooling_output_shape
    (source, target), weights = _avg_pool_map(x_shape[2:], out_shape, kernel, stride, padding,
                                              count_include_pad, divisor_override)
    return _sparse_map(self, x_shape, out_shape, source, target, weights)


def aten_adaptive_avg_pool_backward(grad_output, self):
    """_adaptive_avg_pool2d_backward(Tensor grad_output, Tensor self) -> Tensor
    _adaptive_avg_pool3d_backward(Tensor grad_output, Tensor self) -> Tensor"""
    go_shape, x_shape = _ints(grad_output.shape), _ints(self.shape)
    (source, target), weights = _adaptive_map(x_shape[2:], go_shape[2:])
    return _sparse_map(grad_output, go_shape, x_shape[2:], target, source, weights)


def aten_adaptive_avg_pool3d(self, output_size: Sequence[int]):
    """_adaptive_avg_pool3d(Tensor self, SymInt[3] output_size) -> Tensor"""
    x_shape = _ints(self.shape)
    (source, target), weights = _adaptive_map(x_shape[2:], _ints(output_size))
    return _sparse_map(self, x_shape, _ints(output_size), source, target, weights)


def aten_max_pool_with_indices_backward(grad_output, self, kernel_size: Sequence[int], stride: Sequence[int],
                                        padding: Sequence[int], dilation: Sequence[int], ceil_mode: bool, indices):
    """max_pool3d_with_indices_backward(Tensor grad_output, Tensor self, int[3] kernel_size, int[3] stride,
    int[3] padding, int[3] dilation, bool ceil_mode, Tensor indices) -> Tensor

    indices are flat offsets into each (n, c) volume: one ScatterElements(add). (max_pool2d's backward has a
    torch decomposition, which the exporter applies.)
    """
    go_shape, x_shape = _ints(grad_output.shape), _ints(self.shape)
    flat = _const([*go_shape[:2], math.prod(go_shape[2:])])
    out = op.ScatterElements(_zeros(grad_output, [*x_shape[:2], math.prod(x_shape[2:])]), op.Reshape(indices, flat),
                             op.Reshape(grad_output, flat), axis=2, reduction="add")
    return op.Reshape(out, _const(x_shape))


def _max_pool_with_indices(self, rank: int, kernel_size, stride, padding, dilation, ceil_mode):
    """MaxPool's own Indices output counts over the whole tensor, (n C + c) H W + h W + w (the unpadded input); aten's
    count within each (n, c) plane: the index modulo H W. (Not minus the plane's offset: tinygrad 0.14 and IREE 3.13
    count within the plane already, docs/ops.md; the modulo is right either way.) torchlib's translation (kept for an
    unbatched input) finds the offset with a second, 1x1 MaxPool over the whole input."""
    shape = _ints(self.shape)
    if len(shape) != rank + 2:
        from onnxscript.function_libs.torch_lib.ops import nn as torchlib

        pool = torchlib.aten_max_pool2d_with_indices if rank == 2 else torchlib.aten_max_pool3d_with_indices
        return pool(self, kernel_size, stride, padding, dilation, ceil_mode)
    kernel, stride, padding = _pool_args(kernel_size, stride, padding, rank)
    output, indices = op.MaxPool(self, kernel_shape=kernel, strides=stride, pads=padding * 2,
                                 dilations=_per_axis(dilation, rank), ceil_mode=int(bool(ceil_mode)))
    return output, op.Mod(indices, _array(math.prod(shape[2:]), np.int64))


def aten_max_pool2d_with_indices(self, kernel_size: Sequence[int], stride: Sequence[int] = (),
                                 padding: Sequence[int] = (0, 0), dilation: Sequence[int] = (1, 1),
                                 ceil_mode: bool = False):
    """max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0,
    int[2] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)"""
    return _max_pool_with_indices(self, 2, kernel_size, stride, padding, dilation, ceil_mode)


def aten_max_pool3d_with_indices(self, kernel_size: Sequence[int], stride: Sequence[int] = (),
                                 padding: Sequence[int] = (0, 0, 0), dilation: Sequence[int] = (1, 1, 1),
                                 ceil_mode: bool = False):
    """max_pool3d_with_indices(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0,
    int[3] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)"""
    return _max_pool_with_indices(self, 3, kernel_size, stride, padding, dilation, ceil_mode)


def aten_replication_pad_backward(grad_output, self, padding: Sequence[int]):
    """replication_pad1d_backward(Tensor grad_output, Tensor self, SymInt[2] padding) -> Tensor
    replication_pad2d_backward(Tensor grad_output, Tensor self, SymInt[4] padding) -> Tensor
    replication_pad3d_backward(Tensor grad_output, Tensor self, SymInt[6] padding) -> Tensor

    padding is (left, right, top, bottom, front, back), last axis first; each output reads the input at its
    position clamped into the input, so that input position collects its gradient.
    """
    go_shape, x_shape = _ints(grad_output.shape), _ints(self.shape)
    rank = len(x_shape) - 2
    begin = np.array([int(padding[2 * (rank - 1 - d)]) for d in range(rank)])
    outs = np.array(list(itertools.product(*map(range, go_shape[2:]))), np.int64).reshape(-1, rank)
    ins = np.clip(outs - begin, 0, np.array(x_shape[2:]) - 1)
    return _sparse_map(grad_output, go_shape, x_shape[2:], _flat_index(go_shape[2:], outs),
                       _flat_index(x_shape[2:], ins))


def aten_threshold_backward(grad_output, self, threshold: float):
    """threshold_backward(Tensor grad_output, Tensor self, Scalar threshold) -> Tensor

    ReLU's backward: grad_output where self > threshold (or self is NaN), else 0, as grad_output times that 0/1
    mask: onnxruntime's Where over a broadcast 0 runs about 10x slower than this Mul (13.0 against 1.2 ms on
    8x48x64x64 at 1 thread). The one difference from torch's where: an infinite or NaN grad_output at a cut
    position gives NaN instead of 0.
    """
    keep = op.Not(op.LessOrEqual(self, op.CastLike(op.Constant(value_float=float(threshold)), self)))
    return op.Mul(grad_output, op.CastLike(keep, grad_output))


# --------------------------------------------------------------------------- 5-D grid sampling, copy

def _grid_axis(coord, size: int, align_corners: bool, padding_mode: int, nearest: bool):
    """One axis of aten's GridSampler.h: unnormalize, pad (border / reflection), safe_downgrade_to_int_range, then
    the taps [.., K] (positions and weights) of nearest (round half to even) or linear interpolation."""
    def c(value):
        return op.CastLike(op.Constant(value_float=float(value)), coord)

    pixel = (op.Mul(op.Div(op.Add(coord, c(1)), c(2)), c(size - 1)) if align_corners
             else op.Div(op.Sub(op.Mul(op.Add(coord, c(1)), c(size)), c(1)), c(2)))
    if padding_mode == 2:  # reflect_coordinates over [0, size-1] (align_corners) or [-0.5, size-0.5]
        low, span = (0.0, size - 1.0) if align_corners else (-0.5, float(size))
        if span == 0:
            pixel = op.Mul(pixel, c(0))
        else:
            distance = op.Abs(op.Sub(pixel, c(low)))
            extra = op.Mod(distance, c(span), fmod=1)
            flipped = op.Cast(op.Mod(op.Floor(op.Div(distance, c(span))), c(2), fmod=1), to=ir.DataType.BOOL)
            pixel = op.Add(op.Where(flipped, op.Sub(c(span), extra), extra), c(low))
    if padding_mode:  # clip_coordinates (NaN passes through, as aten's clamp)
        pixel = op.Where(op.Less(pixel, c(0)), c(0), op.Where(op.Greater(pixel, c(size - 1)), c(size - 1), pixel))
    invalid = op.Or(op.Or(op.IsNaN(pixel), op.IsInf(pixel)),
                    op.Or(op.GreaterOrEqual(pixel, c(2147483647.0)), op.Less(pixel, c(-2147483648.0))))
    pixel = op.Where(invalid, c(-100), pixel)
    last = _const([-1])
    if nearest:
        return op.Unsqueeze(op.Round(pixel), last), op.Unsqueeze(op.Expand(c(1), op.Shape(pixel)), last)
    low_tap = op.Floor(pixel)
    high_tap = op.Add(low_tap, c(1))
    return (op.Concat(op.Unsqueeze(low_tap, last), op.Unsqueeze(high_tap, last), axis=-1),
            op.Concat(op.Unsqueeze(op.Sub(high_tap, pixel), last), op.Unsqueeze(op.Sub(pixel, low_tap), last), axis=-1))


def aten_grid_sampler_3d(input, grid, interpolation_mode: int, padding_mode: int, align_corners: bool):
    """grid_sampler_3d(Tensor input, Tensor grid, int interpolation_mode, int padding_mode, bool align_corners)
    -> Tensor

    torchlib targets opset 18, whose GridSample is 4-D only (and onnx cannot convert opset 20's 5-D GridSample
    down for ATC): per-axis taps, the 8 (trilinear) or 1 (nearest) voxels by GatherElements, in the input's dtype.
    """
    if interpolation_mode not in (0, 1):
        raise ValueError(f"grid_sampler_3d: interpolation_mode must be 0 (bilinear) or 1 (nearest), "
                         f"got {interpolation_mode}")
    x_shape, g_shape = _ints(input.shape), _ints(grid.shape)
    n, c, sizes = x_shape[0], x_shape[1], x_shape[2:]  # D, H, W
    points = math.prod(g_shape[1:4])
    coords = op.Reshape(grid, _const([n, points, 3]))
    taps = [_grid_axis(op.Gather(coords, op.Constant(value_int=k), axis=2), sizes[2 - k], bool(align_corners),
                       int(padding_mode), interpolation_mode == 1) for k in range(3)]  # x (W), y (H), z (D)
    # every (point, z tap, y tap, x tap): [N, P, Kz, Ky, Kx]
    axes = (_const([-2, -3]), _const([-1, -3]), _const([-1, -2]))  # x, y, z into their place
    zero = op.CastLike(op.Constant(value_float=0.0), grid)
    index, weight, inside = None, None, None
    for (tap, w), axis, size, stride in zip(taps, axes, sizes[::-1], (1, sizes[2], sizes[1] * sizes[2]), strict=False):
        tap, w = op.Unsqueeze(tap, axis), op.Unsqueeze(w, axis)
        last = op.CastLike(op.Constant(value_float=size - 1.0), tap)
        ok = op.And(op.GreaterOrEqual(tap, zero), op.LessOrEqual(tap, last))
        term = op.Mul(op.Cast(op.Where(ok, tap, zero), to=ir.DataType.INT64), op.Constant(value_int=stride))
        index = term if index is None else op.Add(index, term)  # int64: exact for any volume
        weight = w if weight is None else op.Mul(weight, w)
        inside = ok if inside is None else op.And(inside, ok)
    index = op.Where(inside, index, op.Constant(value_int=0))
    weight = op.Where(inside, weight, zero)
    count = points * (8 if interpolation_mode == 0 else 1)
    index = op.Expand(op.Reshape(index, _const([n, 1, count])), _const([n, c, count]))
    values = op.GatherElements(op.Reshape(input, _const([n, c, math.prod(sizes)])), index, axis=2)
    values = op.Mul(op.Reshape(values, _const([n, c, points, count // points])),
                    op.Reshape(weight, _const([n, 1, points, count // points])))
    return op.Reshape(op.ReduceSum(values, _const([3]), keepdims=0), _const([n, c, *g_shape[1:4]]))


def aten_copy(self, src, non_blocking: bool = False):
    """copy(Tensor self, Tensor src, bool non_blocking=False) -> Tensor

    Replaces torchlib's CastLike(src, self), which drops the broadcast of src to self's shape (a functionalized
    `view.copy_(smaller)`, as in F.affine_grid's base grid).
    """
    return op.Expand(op.CastLike(src, self), op.Shape(self))


# --------------------------------------------------------------------------- losses

def aten_nll_loss_forward(self, target, weight=None, reduction: int = 1, ignore_index: int = -100):
    """nll_loss_forward(Tensor self, Tensor target, Tensor? weight, int reduction, SymInt ignore_index)
    -> (Tensor output, Tensor total_weight)

    torchlib's translation returns a constant total_weight (the size of the output: 1 for a reduced loss), which
    nll_loss_backward divides the gradient by: a mean-reduced loss's gradients came out multiplied by the count of
    samples (or the sum of their class weights). total_weight here is torch's (decompositions.py _nll_loss_forward):
    0 for reduction none on [N, C], else the sum over the targets not ignored of their class weight (1 without
    weights). The output is torchlib's NegativeLogLikelihoodLoss, whose mean divides by that same sum.
    """
    from onnxscript.function_libs.torch_lib.ops import nn as torchlib

    output = torchlib.aten_nll_loss(self, target, weight, reduction, ignore_index)
    if reduction == 0 and len(self.shape) > 1:
        return output, op.CastLike(op.Constant(value_float=0.0), self)
    kept = op.Not(op.Equal(target, op.CastLike(op.Constant(value_int=int(ignore_index)), target)))
    if weight is None:
        return output, op.ReduceSum(op.CastLike(kept, self), keepdims=0)
    safe = op.Where(kept, target, op.CastLike(op.Constant(value_int=0), target))
    weights = op.Where(kept, op.Gather(weight, safe, axis=0), op.CastLike(op.Constant(value_float=0.0), weight))
    return output, op.ReduceSum(weights, keepdims=0)


# --------------------------------------------------------------------------- dropout

def aten_bernoulli_p(self, p: float = 0.5, generator=None):
    """bernoulli.p(Tensor self, float p=0.5, *, Generator? generator=None) -> Tensor

    What dropout in a training step becomes (torch.func traces F.dropout as x * bernoulli(1 - p) / (1 - p)): the
    mask output of ONNX's Dropout in training mode (ratio 1 - p) on ones, so the step holds a training-mode Dropout
    node, whose seed attribute a user can set.
    """
    if p >= 1 or p <= 0:
        return op.Expand(op.CastLike(op.Constant(value_float=1.0 if p >= 1 else 0.0), self), op.Shape(self))
    ones = op.Expand(op.CastLike(op.Constant(value_float=1.0), self), op.Shape(self))
    _, mask = op.Dropout(ones, op.CastLike(op.Constant(value_float=1.0 - float(p)), self),
                         op.Constant(value=ir.tensor(True)))
    return op.CastLike(mask, self)


# aten overload name -> translation (a name with an overload, "op.overload", is that overload only)
TRANSLATIONS = {
    "bernoulli.p": aten_bernoulli_p,
    "nll_loss_forward": aten_nll_loss_forward,
    "convolution": aten_convolution,
    "convolution_backward": aten_convolution_backward,
    "avg_pool2d_backward": aten_avg_pool_backward,
    "avg_pool3d_backward": aten_avg_pool_backward,
    "avg_pool2d": aten_avg_pool,
    "avg_pool3d": aten_avg_pool,
    "_adaptive_avg_pool2d_backward": aten_adaptive_avg_pool_backward,
    "_adaptive_avg_pool3d_backward": aten_adaptive_avg_pool_backward,
    "_adaptive_avg_pool3d": aten_adaptive_avg_pool3d,
    "max_pool3d_with_indices_backward": aten_max_pool_with_indices_backward,
    "max_pool2d_with_indices": aten_max_pool2d_with_indices,
    "max_pool3d_with_indices": aten_max_pool3d_with_indices,
    "threshold_backward": aten_threshold_backward,
    "replication_pad1d_backward": aten_replication_pad_backward,
    "replication_pad2d_backward": aten_replication_pad_backward,
    "replication_pad3d_backward": aten_replication_pad_backward,
    "grid_sampler_3d": aten_grid_sampler_3d,
    "copy": aten_copy,
}
