"""The training test table: one entry per forward model (no torch, no onnx here: read by make_cases.py in the
environment with torch, and by the tests in onnxruntime-training's).

    unet      a U-Net exported from torch (TorchScript exporter, training mode) whose decoder upsamples with
              F.interpolate(mode, scale_factor=2 or size=..., align_corners)
    resize    an ONNX Resize built directly (the configurations com.microsoft::ResizeGrad supports) between two
              convolutions; torch's reference runs onnxruntime's forward Resize as a matrix
    warp      a CNN predicts a flow field; grid_sample warps features (or the input: image_grad False)
    warp_two  two grid_samples of different modes on one flow field
    stn       a spatial transformer: a linear layer predicts theta, affine_grid, grid_sample
"""
from __future__ import annotations

LEARNING_RATE = 0.1
TOLERANCE = 1e-4  # largest |ours - torch| / max|torch| per tensor (loss, gradients, SGD step)

CASES = {}


def _add(name, **spec):
    assert name not in CASES, name
    CASES[name] = spec


for _opset in (17, 20):
    _add(f"unet_nearest_op{_opset}", kind="unet", mode="nearest", opset=_opset)
    _add(f"unet_nearest_size_op{_opset}", kind="unet", mode="nearest", size=True, opset=_opset)
    _add(f"unet_bilinear_op{_opset}", kind="unet", mode="bilinear", align_corners=False, opset=_opset)
    _add(f"unet_bilinear_ac_op{_opset}", kind="unet", mode="bilinear", align_corners=True, opset=_opset)
    _add(f"unet_bilinear_size_op{_opset}", kind="unet", mode="bilinear", align_corners=False, size=True, opset=_opset)
    _add(f"unet_bicubic_op{_opset}", kind="unet", mode="bicubic", align_corners=False, opset=_opset)
    _add(f"unet_bicubic_ac_op{_opset}", kind="unet", mode="bicubic", align_corners=True, opset=_opset)
    _add(f"unet_trilinear_op{_opset}", kind="unet", mode="trilinear", align_corners=False, dims=3, opset=_opset)
    _add(f"unet_nearest3d_op{_opset}", kind="unet", mode="nearest", dims=3, opset=_opset)

# Resize built directly: x [2, 2, 5, 6] -> Conv 3x3 -> Resize -> Conv 3x3; scales (constant, or fed at run time),
# or sizes (the builder passes no scales: the kernel takes the ratio from dY's and X's shapes).
_COORDINATES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
                "tf_half_pixel_for_nn")
for _coordinate in _COORDINATES:
    _add(f"resize_linear_{_coordinate}", kind="resize",
         attrs=dict(mode="linear", coordinate_transformation_mode=_coordinate), scales=[1.0, 1.0, 1.7, 2.0])
for _rounding in ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil"):
    _add(f"resize_nearest_{_rounding}", kind="resize",
         attrs=dict(mode="nearest", coordinate_transformation_mode="half_pixel", nearest_mode=_rounding),
         scales=[1.0, 1.0, 2.5, 1.5])
_add("resize_nearest_asymmetric_floor", kind="resize",
     attrs=dict(mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
     scales=[1.0, 1.0, 2.0, 3.0])
_add("resize_nearest_align_corners_sizes", kind="resize",
     attrs=dict(mode="nearest", coordinate_transformation_mode="align_corners", nearest_mode="round_prefer_ceil"),
     sizes=[2, 4, 9, 11])
_add("resize_nearest_tf_half_pixel_for_nn", kind="resize",
     attrs=dict(mode="nearest", coordinate_transformation_mode="tf_half_pixel_for_nn", nearest_mode="floor"),
     scales=[1.0, 1.0, 1.6, 2.0])
for _a in (-0.75, -0.5):
    for _exclude in (0, 1):
        _add(f"resize_cubic_a{abs(_a)}_exclude{_exclude}", kind="resize",
             attrs=dict(mode="cubic", coordinate_transformation_mode="half_pixel", cubic_coeff_a=_a,
                        exclude_outside=_exclude),
             scales=[1.0, 1.0, 2.0, 1.5])
_add("resize_cubic_align_corners_sizes", kind="resize",
     attrs=dict(mode="cubic", coordinate_transformation_mode="align_corners"), sizes=[2, 4, 8, 13])
_add("resize_cubic_asymmetric", kind="resize", attrs=dict(mode="cubic", coordinate_transformation_mode="asymmetric"),
     scales=[1.0, 1.0, 2.0, 2.0])
_add("resize_linear_downscale", kind="resize", attrs=dict(mode="linear"), scales=[1.0, 1.0, 0.6, 0.5])
_add("resize_linear_antialias_down", kind="resize", attrs=dict(mode="linear", antialias=1), scales=[1.0, 1.0, 0.6, 0.5])
_add("resize_cubic_antialias_down", kind="resize",
     attrs=dict(mode="cubic", antialias=1, cubic_coeff_a=-0.5, exclude_outside=1), sizes=[2, 4, 3, 4])
_add("resize_linear_tf_crop_and_resize", kind="resize",
     attrs=dict(mode="linear", coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=0.5),
     roi=[0.0, 0.0, 0.1, -0.2, 1.0, 1.0, 0.8, 1.1], scales=[1.0, 1.0, 2.0, 1.5])
_add("resize_linear_axes", kind="resize", attrs=dict(mode="linear", axes=[2, 3]), scales=[1.6, 2.0])
# axes=[3], not [-1]: onnxruntime 1.19.2's forward Resize crashes (SIGSEGV) on negative axes; the kernel's negative
# axes are tested with onnxruntime's current Resize in tests/ops/test_microsoft_resize_grad.py
_add("resize_linear_axes_last", kind="resize", attrs=dict(mode="linear", coordinate_transformation_mode="align_corners",
                                                          axes=[3]), sizes=[13])
_add("resize_linear_sizes", kind="resize", attrs=dict(mode="linear"), sizes=[2, 4, 7, 13])
_add("resize_linear_runtime_scales", kind="resize", attrs=dict(mode="linear"), scales=[1.0, 1.0, 1.7, 2.0],
     runtime_scales=True)
_add("resize_nearest_1d", kind="resize", attrs=dict(mode="nearest", coordinate_transformation_mode="asymmetric",
                                                    nearest_mode="floor"), scales=[1.0, 1.0, 2.5], spatial=[7])
_add("resize_linear_3d", kind="resize", attrs=dict(mode="linear", coordinate_transformation_mode="align_corners"),
     scales=[1.0, 1.0, 2.0, 1.5, 2.0], spatial=[3, 4, 5])

for _opset in (17, 20):
    for _mode in ("bilinear", "nearest", "bicubic"):
        for _padding in ("zeros", "border", "reflection"):
            for _ac in (False, True):
                _add(f"warp_{_mode}_{_padding}_ac{int(_ac)}_op{_opset}", kind="warp", mode=_mode, padding=_padding,
                     align_corners=_ac, opset=_opset)
    _add(f"warp_image_input_op{_opset}", kind="warp", mode="bilinear", padding="border", align_corners=False,
         image_grad=False, opset=_opset)
    _add(f"warp_two_op{_opset}", kind="warp_two", opset=_opset)
for _mode in ("bilinear", "nearest"):
    for _padding in ("zeros", "border", "reflection"):
        for _ac in (False, True):
            _add(f"warp3d_{_mode}_{_padding}_ac{int(_ac)}_op20", kind="warp", mode=_mode, padding=_padding,
                 align_corners=_ac, dims=3, opset=20)
_add("stn_op20", kind="stn", mode="bilinear", padding="zeros", align_corners=False, opset=20)
_add("stn_bicubic_border_ac_op20", kind="stn", mode="bicubic", padding="border", align_corners=True, opset=20)
_add("stn_nearest_reflection_op20", kind="stn", mode="nearest", padding="reflection", align_corners=False, opset=20)
_add("stn3d_op20", kind="stn", mode="bilinear", padding="zeros", align_corners=False, dims=3, opset=20)
_add("stn3d_ac_op20", kind="stn", mode="bilinear", padding="border", align_corners=True, dims=3, opset=20)
