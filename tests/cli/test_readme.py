"""Every ```python block of README.md, CONTRIBUTING.md and docs/*.md runs, each in a fresh process and an empty
working directory, so the documentation cannot drift from the package. A block repeated word for word in two
files (the README shows some of the docs' examples) runs once."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

from doc_blocks import ROOT, blocks

BLOCKS = blocks("python")


def test_the_documents_have_python_blocks():
    assert len(re.findall(r"^```python\n", (ROOT / "README.md").read_text(), re.M)) >= 3
    assert len(BLOCKS) >= 5


@pytest.mark.parametrize("block", list(BLOCKS), ids=list(BLOCKS.values()))
def test_documented_python_block_runs(block, tmp_path):
    result = subprocess.run([sys.executable, "-c", block], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"{BLOCKS[block]}:\n{block}\n{result.stderr}"
