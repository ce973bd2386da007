"""Facts the C++ kernels state a second time, read from their sources and compared with the Python package's: the
custom domain (runtime/src/kernel_common.h kDomain), the numbering of the tap kinds (runtime/src/taps.h TapKind,
the order of opset/_taps.py TAP_KINDS), and the separable families' row tables (written from the spec rows)."""
from __future__ import annotations

import pathlib
import re

from resample_grad.opset import DOMAIN

SOURCES = pathlib.Path(__file__).resolve().parents[2] / "runtime" / "src"


def test_cpp_domain_is_the_python_domain():
    text = (SOURCES / "kernel_common.h").read_text()
    assert re.findall(r'constexpr const char\* kDomain = "([^"]*)";', text) == [DOMAIN]


def test_cpp_tap_kinds_are_numbered_as_python_tap_kinds():
    from resample_grad.opset import _taps

    enum = re.search(r"enum class TapKind : int \{(.*?)\};", (SOURCES / "taps.h").read_text(), re.S)
    assert enum is not None
    cpp = [(name, int(number)) for name, number in re.findall(r"\bk(\w+) = (\d+),", enum.group(1))]
    python = [("".join(part.capitalize() for part in kind.split("_")), number)
              for number, kind in enumerate(_taps.TAP_KINDS)]
    assert cpp == python


def test_cpp_row_tables_are_the_spec_rows():
    """runtime/src/*_rows.inc, committed because the C++ build runs no Python, are what the spec rows write."""
    from resample_grad.opset import OPS, _native_rows

    tables = _native_rows.tables()
    for name, text in tables.items():
        assert (SOURCES / name).read_text() == text, (
            f"runtime/src/{name} is not the spec rows': run python -m resample_grad.opset._native_rows")
    rows = "".join(tables.values())
    separable = [t for t, op in OPS.items() if type(op.spec).__name__ in ("UpsampleSpec", "ResizeV2Spec")]
    assert len(separable) == 14 and all(rows.count(f'{{"{t}", ') == 1 for t in separable)
