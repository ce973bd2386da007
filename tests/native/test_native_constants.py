"""Facts the C++ kernels state a second time, read from their sources and compared with the Python package's: the
custom domain (runtime/src/kernel_common.h kDomain) and the numbering of the tap kinds (runtime/src/taps.h TapKind,
the order of opset/_taps.py TAP_KINDS)."""
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
