"""The function bodies of GridSampler2DGrad and GridSampler3DGrad, one per mode, padding and align_corners.

Per grid point and spatial axis: the taps (pixel positions), their weights and d weight / d pixel, after
aten's GridSampler.h coordinate rules (the NumPy twins are _coords.py and _grid_sampler.py). The point's
taps are the product of its axes' taps; grad_input is a ScatterElements(add) of grad_output times each
tap's weight into the image, grad_grid a gather of the image at the taps dotted with grad_output over
the channels, times the weights' slopes. A tap outside the image (or of a NaN point) goes to a spare
pixel after the image, which is dropped, and reads zero.

The scatter-free form (BodyKey.scatter_free, opset.inline(scatter_free=True)) scatters and reads through
SeparableTaps instead: per-axis weight matrices and MatMuls, no ScatterElements and no integer index tensor, so that
runtimes without a scatter-add (onnx2tf / TFLite) run it too; it costs memory and time quadratic in the image's size
(SeparableTaps says how much), so it is an option, not the portable default. The forward GridSample that
inline(forward=) writes is the read of the same form.
"""
from __future__ import annotations

import dataclasses

from ._graph import INT64, BodyKey, Graph

# bicubic: the four taps' offsets from floor(pixel), and Keys' coefficients of the taps as cubics in the fraction t,
# c_k(t) = T0[k] + T1[k] t + T2[k] t^2 + T3[k] t^3 (with A = -0.75, aten's: A (t - 2 t^2 + t^3), 1 - (A + 3) t^2 +
# (A + 2) t^3, -A t + (2 A + 3) t^2 - (A + 2) t^3, A (t^2 - t^3); every coefficient exact in binary)
CUBIC_OFFSETS = [-1.0, 0.0, 1.0, 2.0]
CUBIC_A = -0.75
CUBIC_T0 = [0.0, 1.0, 0.0, 0.0]
CUBIC_T1 = [CUBIC_A, 0.0, -CUBIC_A, 0.0]
CUBIC_T2 = [-2 * CUBIC_A, -(CUBIC_A + 3), 2 * CUBIC_A + 3, CUBIC_A]
CUBIC_T3 = [CUBIC_A, CUBIC_A + 2, -(CUBIC_A + 2), -CUBIC_A]
# beyond +-2^23 pixels float and double reflect differently: NaN, a point that reads nothing (_coords.py)
REFLECT_LIMIT = 2.0 ** 23


@dataclasses.dataclass
class PointTaps:
    """One axis's taps of every grid point: [N, P, K] positions (pixels), weights and d weight / d pixel (None:
    zero, nearest), and [N, P] d pixel / d grid."""
    position: str
    weight: str
    slope: str | None
    scale: str


def unnormalize(g: Graph, coord: str, size: str, align_corners: bool):
    """grid_sampler_unnormalize_set_grad: [-1, 1] to pixels, and d pixel / d grid."""
    if align_corners:
        return g.Mul(g.Div(g.Add(coord, 1.0), 2.0), g.Sub(size, 1.0)), g.Div(g.Sub(size, 1.0), 2.0)
    return g.Div(g.Sub(g.Mul(g.Add(coord, 1.0), size), 1.0), 2.0), g.Div(size, 2.0)


def clip(g: Graph, coord: str, size: str, gradient: bool = True):
    """clip_coordinates_set_grad; NaN passes through. The gradient is None unless asked for."""
    limit = g.Sub(size, 1.0)
    low = g.LessOrEqual(coord, 0.0)
    high = g.GreaterOrEqual(coord, limit)
    clipped = g.Where(low, 0.0, g.Where(high, limit, coord))
    return clipped, g.Sub(1.0, g.Cast(g.Or(low, high), to=g.opmath)) if gradient else None


def reflect(g: Graph, coord: str, size: str, align_corners: bool, gradient: bool = True):
    """reflect_coordinates_set_grad, the flip parity from |shifted| mod 2 span (exact below 2^24)."""
    coord = g.Where(g.Greater(g.Abs(coord), REFLECT_LIMIT), g.Div(0.0, 0.0), coord)
    low = 0.0 if align_corners else -0.5
    span = g.Sub(size, 1.0) if align_corners else size
    shifted = g.Sub(coord, low)
    magnitude = g.Abs(shifted)
    period = g.Mul(span, 2.0)
    rest = g.Sub(magnitude, g.Mul(g.Floor(g.Div(magnitude, period)), period))
    flipped = g.Cast(g.GreaterOrEqual(rest, span), to=g.opmath)  # the mirror image is period - rest
    reflected = g.Add(g.Add(rest, g.Mul(flipped, g.Sub(period, g.Mul(rest, 2.0)))), low)
    grad = None
    if gradient:
        negative = g.Cast(g.Less(shifted, 0.0), to=g.opmath)
        grad = g.Mul(g.Sub(1.0, g.Mul(negative, 2.0)), g.Sub(1.0, g.Mul(flipped, 2.0)))
    if align_corners:  # one pixel has no room to reflect: aten returns 0 with gradient 0
        degenerate = g.Equal(span, 0.0)
        reflected = g.Where(degenerate, 0.0, reflected)
        grad = g.Where(degenerate, 0.0, grad) if gradient else None
    return reflected, grad


def pad(g: Graph, coord: str, size: str, padding: str, align_corners: bool, gradient: bool = True):
    """compute_coordinates_set_grad: the padded coordinate and its gradient (None: 1, or not asked for)."""
    if padding == "border":
        return clip(g, coord, size, gradient)
    if padding == "reflection":
        reflected, reflect_grad = reflect(g, coord, size, align_corners, gradient)
        clipped, clip_grad = clip(g, reflected, size, gradient)
        return clipped, g.Mul(reflect_grad, clip_grad) if gradient else None
    return coord, None


def cubic_weights(g: Graph, t: str, slopes: bool = True):
    """Keys' coefficients of the four taps (get_cubic_upsample_coefficients, A = -0.75) for the fraction t, and
    (if asked for) their derivatives in t, [*t.shape, 4]: each a cubic in t, by Horner's rule."""
    t = g.Unsqueeze(t, [-1])
    weights = g.Add(g.Mul(g.Add(g.Mul(g.Add(g.Mul(CUBIC_T3, t), CUBIC_T2), t), CUBIC_T1), t), CUBIC_T0)
    if not slopes:
        return weights, None
    cubed, squared = [3 * c for c in CUBIC_T3], [2 * c for c in CUBIC_T2]
    return weights, g.Add(g.Mul(g.Add(g.Mul(cubed, t), squared), t), CUBIC_T1)


def axis_taps(g: Graph, coord: str, size: str, mode: str, padding: str, align_corners: bool) -> PointTaps:
    """The taps of one axis for the grid coordinates coord [N, P]; size: the axis's length (scalar)."""
    pixel, mult = unnormalize(g, coord, size, align_corners)
    if mode == "bicubic":  # every tap padded on its own, no padding gradient (as aten)
        finite = g.Equal(g.Sub(pixel, pixel), 0.0)  # a NaN or infinite point reads nothing
        safe = g.Where(finite, pixel, 0.0)
        base = g.Floor(safe)
        weight, slope = cubic_weights(g, g.Sub(safe, base))
        taps = g.Add(g.Unsqueeze(base, [-1]), CUBIC_OFFSETS)
        position, _ = pad(g, taps, size, padding, align_corners, gradient=False)
        reads = g.Unsqueeze(finite, [-1])
        return PointTaps(position, g.Where(reads, weight, 0.0), g.Where(reads, slope, 0.0), mult)
    padded, pad_grad = pad(g, pixel, size, padding, align_corners)
    scale = mult if pad_grad is None else g.Mul(mult, pad_grad)
    if mode == "nearest":
        return PointTaps(g.Unsqueeze(g.Round(padded), [-1]), g.Expand(1.0, [1, 1, 1]), None, scale)
    low = g.Floor(padded)
    fraction = g.Unsqueeze(g.Sub(padded, low), [-1])
    return PointTaps(g.Add(g.Unsqueeze(low, [-1]), [0.0, 1.0]), g.Concat(g.Sub(1.0, fraction), fraction, axis=-1),
                     g.Expand([-1.0, 1.0], [1, 1, 2]), scale)


def grid_sampler_body(key: BodyKey, inputs: list[str], outputs: list[str], spatial: int, mode: str, padding: str,
                      align_corners: bool):
    """The FunctionProto of a grid sampler node: `spatial` 2 or 3, `wanted` which outputs the node names. An empty
    batch or channel axis gives zeros (onnxruntime's GatherElements and ScatterElements refuse empty index shapes).
    The zeros are the else branch: tract 0.23.9 gives a node that reads an If's output the then branch's value when
    that is a constant, whatever the condition (docs/ops.md, "Portable form")."""
    body = key.graph()
    grad_output, image, grid = inputs
    some = body.Greater(body.ReduceProd(body.Shape(image, start=0, end=2), keepdims=0), 0)
    zeros = body.branch()
    zero_outputs = [zeros.like(zeros.Expand(0.0, zeros.Shape(value)), value) for value in (image, grid)]
    gradients = body.branch()
    compute = _separable_gradients if key.scatter_free else _gradients
    results = compute(gradients, inputs, spatial, mode, padding, align_corners, list(key.wanted))
    values = body.If(some, then_branch=gradients.graph(results[:len(outputs)]),
                     else_branch=zeros.graph(zero_outputs[:len(outputs)]), outputs=len(outputs))
    values = [values] if len(outputs) == 1 else list(values)
    return body.function(key.op_type, key.overload, inputs, dict(zip(outputs, values, strict=True)))


@dataclasses.dataclass
class TapTable:
    """Every grid point's taps over the image: `taps` per spatial axis (positions as flat offsets), `weight` their
    product [N, P, K_0, ..], `index` [N, C, P T] the flat pixel each tap reads (outside: the spare pixel `pixels`),
    `inside_all` [N, P, K_0, ..] whether it is inside; the shapes as run-time values."""
    taps: list
    weight: str
    index: str
    inside_all: str
    batch: str
    batch_channels: str
    pixels: str
    points: str
    tap_count: str
    by_channel: str


def point_axes(g: Graph, image: str, grid: str, spatial: int, mode: str, padding: str, align_corners: bool):
    """Every grid point's taps along each spatial axis (in spatial order), [(PointTaps, size as opmath scalar)], and
    the number of points [1]: aten's GridSampler.h coordinate rules, for every form of the body."""
    points = g.ReduceProd(g.Shape(grid, start=1, end=-1), keepdims=1)
    # allowzero and explicit sizes: an empty batch or channel axis reshapes to empty
    coords = g.Reshape(g.in_opmath(grid), g.Concat(g.Shape(image, start=0, end=1), points, [spatial], axis=0),
                       allowzero=1)
    dims = g.Shape(image)
    axes = []
    for axis in range(spatial):  # grid channels x, y(, z): the last spatial axis first
        size = g.Cast(g.Gather(dims, 2 + axis), to=g.opmath)
        axes.append((axis_taps(g, g.Gather(coords, spatial - 1 - axis, axis=2), size, mode, padding, align_corners),
                     size))
    return axes, points


def tap_table(g: Graph, image: str, grid: str, spatial: int, mode: str, padding: str,
              align_corners: bool) -> TapTable:
    """The taps of every grid point (aten's GridSampler.h coordinate rules), for the forward and the gradients."""
    batch_channels = g.Shape(image, start=0, end=2)
    # an image without pixels (symbolic dims attach() could not check) fails here, as the kernel refuses it
    pixels = g.ReduceProd(g.Shape(image, start=2), keepdims=1)
    pixels = g.Reshape(pixels, g.Where(g.Greater(pixels, 0), [1], [-2]))  # [1]
    point_taps, points = point_axes(g, image, grid, spatial, mode, padding, align_corners)
    dims = g.Shape(image)
    taps, keys, inside_all = [], None, None
    stride = g.value(1)
    tap_axes = list(range(2, 2 + spatial))  # [N, P, K_0, .., K_{spatial-1}]: one tap axis per spatial axis
    for axis in reversed(range(spatial)):  # W first: its stride is 1
        one, size = point_taps[axis]
        others = [a for a in tap_axes if a != 2 + axis]
        inside = g.Unsqueeze(g.And(g.GreaterOrEqual(one.position, 0.0), g.LessOrEqual(one.position, g.Sub(size, 1.0))),
                             others)
        at = g.Mul(g.Cast(g.Where(inside, g.Unsqueeze(one.position, others), 0.0), to=INT64), stride)
        weight = g.Where(inside, g.Unsqueeze(one.weight, others), 0.0)
        slope = None if one.slope is None else g.Where(inside, g.Unsqueeze(one.slope, others), 0.0)
        taps.insert(0, PointTaps(at, weight, slope, one.scale))
        keys = at if keys is None else g.Add(keys, at)
        inside_all = inside if inside_all is None else g.And(inside_all, inside)
        stride = g.Mul(stride, g.Gather(dims, 2 + axis))
    weight = taps[0].weight
    for one in taps[1:]:
        weight = g.Mul(weight, one.weight)
    tap_count = g.ReduceProd(g.Shape(weight, start=2), keepdims=1)  # T
    batch = g.Shape(image, start=0, end=1)
    by_tap = g.Concat(batch, g.Mul(points, tap_count), axis=0)
    keys = g.Reshape(g.Where(inside_all, keys, pixels), by_tap, allowzero=1)  # outside: the spare pixel
    by_channel = g.Concat(batch_channels, g.Shape(keys, start=1), axis=0)
    index = g.Expand(g.Unsqueeze(keys, [1]), by_channel)  # [N, C, P T]
    return TapTable(taps, weight, index, inside_all, batch, batch_channels, pixels, points, tap_count, by_channel)


def read_taps(g: Graph, table: TapTable, image: str) -> str:
    """The image (opmath) at every tap, [N, C, P, T]; 0 outside."""
    image_planes = g.Reshape(g.in_opmath(image), g.Concat(table.batch_channels, table.pixels, axis=0), allowzero=1)
    spare = g.Pad(image_planes, [0, 0, 0, 0, 0, 1])  # a zero pixel after the image
    read = g.GatherElements(spare, table.index, axis=2)  # [N, C, P T]
    return g.Reshape(read, g.Concat(table.batch_channels, table.points, table.tap_count, axis=0), allowzero=1)


def grid_sample(g: Graph, image: str, grid: str, spatial: int, mode: str, padding: str, align_corners: bool,
                scatter_free: bool = False) -> str:
    """ONNX GridSample (torch's grid_sample) of image by grid, [N, C, *grid's points], in opmath: the taps read and
    weighted, the adjoint of grad_input below (scatter_free: read by the dense MatMuls of SeparableTaps)."""
    if scatter_free:
        taps = SeparableTaps(g, image, grid, spatial, mode, padding, align_corners, slopes=False)
        sampled, batch_channels = taps.read(taps.weights), taps.batch_channels  # [N, C, P]
    else:
        table = tap_table(g, image, grid, spatial, mode, padding, align_corners)
        weights = g.Reshape(table.weight, g.Concat(table.batch, [1], table.points, table.tap_count, axis=0),
                            allowzero=1)
        sampled = g.ReduceSum(g.Mul(read_taps(g, table, image), weights), [3], keepdims=0)  # [N, C, P]
        batch_channels = table.batch_channels
    return g.Reshape(sampled, g.Concat(batch_channels, g.Shape(grid, start=1, end=-1), axis=0), allowzero=1)


class SeparableTaps:
    """The scatter-free form's taps (BodyKey.scatter_free): per spatial axis a, the matrices [N, P, S_a] that hold, in
    the row of point p, the weights (`weights`) or d weight / d pixel (`slopes`, None for nearest) of p's taps at their
    pixels, one-hot times weight summed over the taps (Equal(position, pixel): a tap outside the image, or of a NaN
    point, matches no pixel and adds nothing), and d pixel / d grid (`scales`, [N, P]). The point's weight at pixel
    (.., h, w) is the product of its rows' entries, so reading the image at the taps and scattering into it are
    MatMuls: no ScatterElements (onnx2tf converts no reduction='add') and no integer index tensor (onnx2tf guesses
    layouts for tensors of rank >= 3). The price: memory O(N P (S_0 + .. + S_{k-1})) for the matrices (the leading
    axes' outer product: O(N P S_0 .. S_{k-2})) plus [N, C, P, S_{k-1}] and [N, C, S_0 .. S_{k-2}, P] intermediates,
    against O(N C P K^k) for the scatter form (K taps per axis), and MatMuls of O(N C P S_0 .. S_{k-1}) operations:
    quadratic in the image's size where the scatter form is linear (docs/ops.md, "The portable form")."""

    def __init__(self, g: Graph, image: str, grid: str, spatial: int, mode: str, padding: str, align_corners: bool,
                 slopes: bool = True):
        self.g = g
        point_taps, self.points = point_axes(g, image, grid, spatial, mode, padding, align_corners)
        self.batch_channels = g.Shape(image, start=0, end=2)
        self.weights, self.slopes, self.scales = [], [], []
        for taps, size in point_taps:
            pixels = g.Range(0.0, size, 1.0)  # [S]
            hits = g.Equal(g.Unsqueeze(taps.position, [-1]), pixels)  # [N, P, K, S]
            self.weights.append(g.ReduceSum(g.Where(hits, g.Unsqueeze(taps.weight, [-1]), 0.0), [2], keepdims=0))
            self.slopes.append(None if taps.slope is None or not slopes else
                               g.ReduceSum(g.Where(hits, g.Unsqueeze(taps.slope, [-1]), 0.0), [2], keepdims=0))
            self.scales.append(taps.scale)
        # the image as [N, C, S_0 .. S_{k-2}, S_{k-1}]: the leading axes flattened, as their outer product below
        leading = g.ReduceProd(g.Shape(image, start=2, end=-1), keepdims=1)
        self.image = g.Reshape(g.in_opmath(image), g.Concat(self.batch_channels, leading, g.Shape(image, start=-1),
                                                           axis=0), allowzero=1)
        self.rows = g.Concat(g.Shape(image, start=0, end=1), self.points, [-1], axis=0)  # [N, P, -1]

    def _leading(self, matrices: list) -> str:
        """The outer product of the leading axes' matrices per point, [N, P, S_0 .. S_{k-2}], transposed to
        [N, 1, S_0 .. S_{k-2}, P] for the MatMuls."""
        g = self.g
        product = matrices[0]
        for matrix in matrices[1:-1]:
            product = g.Reshape(g.Mul(g.Unsqueeze(product, [-1]), g.Unsqueeze(matrix, [2])), self.rows)
        return g.Unsqueeze(g.Transpose(product, perm=[0, 2, 1]), [1])

    def read(self, matrices: list) -> str:
        """The sum over the image's pixels of the image times the product of the axes' `matrices`, [N, C, P]."""
        g = self.g
        by_row = g.MatMul(self.image, g.Unsqueeze(g.Transpose(matrices[-1], perm=[0, 2, 1]), [1]))  # [N, C, L, P]
        return g.ReduceSum(g.Mul(by_row, self._leading(matrices)), [2], keepdims=0)

    def scatter(self, values: str, image: str) -> str:
        """values [N, C, P] (opmath) spread over the image's pixels by the weights, shaped like image, in opmath: the
        adjoint of read(image, weights)."""
        g = self.g
        by_point = g.Mul(g.Unsqueeze(values, [-1]), g.Unsqueeze(self.weights[-1], [1]))  # [N, C, P, W]
        return g.Reshape(g.MatMul(self._leading(self.weights), by_point), g.Shape(image))  # [N, C, L, W]


def _gradients(g: Graph, inputs: list[str], spatial: int, mode: str, padding: str, align_corners: bool,
               wanted: list[bool]) -> list[str]:
    """grad_input and grad_grid (an empty tensor for an output the node does not name)."""
    grad_output, image, grid = inputs
    table = tap_table(g, image, grid, spatial, mode, padding, align_corners)
    taps, weight, index, inside_all = table.taps, table.weight, table.index, table.inside_all
    batch, batch_channels, pixels, points, tap_count = (table.batch, table.batch_channels, table.pixels, table.points,
                                                        table.tap_count)
    by_channel = table.by_channel
    tap_axes = list(range(2, 2 + spatial))
    g_planes = g.Reshape(g.in_opmath(grad_output), g.Concat(batch_channels, points, axis=0), allowzero=1)
    results = []
    if wanted[0]:
        if mode == "nearest":
            updates = g_planes
        else:
            point_weights = g.Reshape(weight, g.Concat(batch, [1], points, tap_count, axis=0), allowzero=1)
            updates = g.Reshape(g.Mul(g.Unsqueeze(g_planes, [-1]), point_weights), by_channel, allowzero=1)
        zeros = g.Expand(0.0, g.Concat(batch_channels, g.Add(pixels, 1), axis=0))
        planes = g.ScatterElements(zeros, index, updates, axis=2, reduction="add")
        grad_input = g.Slice(planes, [0], pixels, [2])
        results.append(g.like(g.Reshape(grad_input, g.Shape(image), allowzero=1), image))
    else:
        results.append(g.like(g.Expand(0.0, [0]), image))
    if wanted[1] and mode == "nearest":
        results.append(g.like(g.Expand(0.0, g.Shape(grid)), grid))
    elif wanted[1]:
        dot = g.ReduceSum(g.Mul(read_taps(g, table, image), g.Unsqueeze(g_planes, [-1])), [1],
                          keepdims=0)  # [N, P, T]
        dot = g.Reshape(g.Where(g.Reshape(inside_all, g.Shape(dot), allowzero=1), dot, 0.0), g.Shape(weight),
                        allowzero=1)
        channels = []
        for axis in reversed(range(spatial)):  # grid channels x, y(, z): the last spatial axis first
            product = taps[axis].slope
            for other in range(spatial):
                if other != axis:
                    product = g.Mul(product, taps[other].weight)
            channels.append(g.Mul(g.ReduceSum(g.Mul(dot, product), tap_axes, keepdims=0), taps[axis].scale))
        grad_grid = g.Concat(*[g.Unsqueeze(c, [-1]) for c in channels], axis=-1)
        results.append(g.like(g.Reshape(grad_grid, g.Shape(grid), allowzero=1), grid))
    else:
        results.append(g.like(g.Expand(0.0, [0]), grid))
    return results


def _separable_gradients(g: Graph, inputs: list[str], spatial: int, mode: str, padding: str, align_corners: bool,
                         wanted: list[bool]) -> list[str]:
    """_gradients in the scatter-free form (SeparableTaps): MatMuls instead of ScatterElements(add) and
    GatherElements."""
    grad_output, image, grid = inputs
    slopes = wanted[1] and mode != "nearest"
    taps = SeparableTaps(g, image, grid, spatial, mode, padding, align_corners, slopes)
    g_planes = g.Reshape(g.in_opmath(grad_output), g.Concat(taps.batch_channels, taps.points, axis=0), allowzero=1)
    results = [g.like(taps.scatter(g_planes, image), image) if wanted[0] else g.like(g.Expand(0.0, [0]), image)]
    if slopes:
        channels = []
        for axis in reversed(range(spatial)):  # grid channels x, y(, z): the last spatial axis first
            matrices = [taps.slopes[a] if a == axis else taps.weights[a] for a in range(spatial)]
            dot = g.ReduceSum(g.Mul(taps.read(matrices), g_planes), [1], keepdims=0)  # [N, P]
            channels.append(g.Unsqueeze(g.Mul(dot, taps.scales[axis]), [-1]))
        results.append(g.like(g.Reshape(g.Concat(*channels, axis=-1), g.Shape(grid), allowzero=1), grid))
    elif wanted[1]:
        results.append(g.like(g.Expand(0.0, g.Shape(grid)), grid))
    else:
        results.append(g.like(g.Expand(0.0, [0]), grid))
    return results
