"""The C++ kernels' row tables, written from the spec rows: one place for what a separable op is.

runtime/src/upsample_rows.inc and resize_v2_rows.inc hold the rows of kUpsampleRows (upsample_grad.cc) and
kResizeV2Rows (resize_v2_grad.cc), one per SPEC of opset/<op>.py, in the order of opset/__init__.py's table. They
are committed (the C++ build runs no Python); after changing a row, write them again:

    python -m resample_grad.opset._native_rows

tests/native/test_native_constants.py fails while the committed files differ from what this module writes.
"""
from __future__ import annotations

import pathlib

from . import OPS
from ._resize_v2 import ResizeV2Spec
from ._upsample import UpsampleSpec

HEADER = ("// Written by `python -m resample_grad.opset._native_rows` from the spec rows (opset/<op>.py SPEC): "
          "edit those,\n// not this file.\n")
WIDTH = 120


def _tap_kind(taps: str) -> str:
    """TapKind's name for a key of _taps.TAP_KINDS ("nearest_exact" -> TapKind::kNearestExact)."""
    return "TapKind::k" + "".join(part.capitalize() for part in taps.split("_"))


def _strings(values) -> str:
    return "{" + ", ".join(f'"{v}"' for v in values) + "}"


def _options(flags: dict[str, bool]) -> str:
    return " | ".join(name for name, on in flags.items() if on) or "0"


def _row(fields: list[str]) -> str:
    """One initializer, wrapped before the field that would pass the width."""
    lines, line = [], "    {"
    for k, field in enumerate(fields):
        piece = field + ("}," if k == len(fields) - 1 else ",")
        if len(line) + len(piece) + 1 > WIDTH and line.strip() != "{":
            lines.append(line)
            line = "     " + piece
        else:
            line += ("" if line.endswith("{") else " ") + piece
    return "\n".join([*lines, line])


def upsample_row(spec: UpsampleSpec) -> str:
    main = spec.spatial_ranks[0]
    options = _options({"kAlso1d": 1 in spec.spatial_ranks[1:], "kAlignCorners": spec.align_corners,
                        "kOutputSizeRequired": spec.output_size_required,
                        "kOutputSizeOrScales": spec.output_size_or_scales})
    return _row([f'"{spec.op_type}"', str(spec.since_version), _tap_kind(spec.taps), str(main), options,
                 _strings(spec.names(main)), _strings(spec.scales),
                 f'"{spec.scales_list}"' if spec.scales_list else "nullptr"])


def resize_v2_row(spec: ResizeV2Spec) -> str:
    options = _options({"kHalfPixelCenters": spec.half_pixel_centers, "kSingleScale": spec.scale_attr == "scale",
                        "kSizeInput": spec.shape_input == "size"})
    return _row([f'"{spec.op_type}"', str(spec.since_version), _tap_kind(spec.taps), str(spec.spatial), options])


def tables() -> dict[str, str]:
    """{file name in runtime/src: its text}."""
    specs = [op.spec for op in OPS.values()]
    return {
        "upsample_rows.inc": HEADER + "\n".join(upsample_row(s) for s in specs if isinstance(s, UpsampleSpec)) + "\n",
        "resize_v2_rows.inc": HEADER + "\n".join(resize_v2_row(s) for s in specs if isinstance(s, ResizeV2Spec))
                              + "\n",
    }


def sources() -> pathlib.Path:
    """runtime/src of the source tree (opset/ and runtime/ sit side by side at its root)."""
    return pathlib.Path(__file__).resolve().parents[1] / "runtime" / "src"


if __name__ == "__main__":
    if not sources().is_dir():
        raise SystemExit(f"{sources()} is not there: write the rows from a source tree installed with pip install -e "
                         "(CONTRIBUTING.md)")
    for name, text in tables().items():
        (sources() / name).write_text(text)
        print(f"wrote {sources() / name}")
