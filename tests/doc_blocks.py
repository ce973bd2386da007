"""The code blocks of the documentation (README.md, CONTRIBUTING.md, docs/*.md), for tests/cli/test_readme.py and
tests_training/test_readme_and_examples.py. Standard library only: the training environment imports it too."""
from __future__ import annotations

import pathlib
import re

ROOT = pathlib.Path(__file__).parents[1]
DOCUMENTS = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]


def blocks(info: str) -> dict:
    """The text of every fenced block whose info string is `info` ("python", "python training") -> where it first
    appears ("docs/pytorch.md:2": the second such block there). A block repeated word for word is listed once."""
    found = {}
    for document in DOCUMENTS:
        texts = re.findall(rf"^```{re.escape(info)}\n(.*?)^```$", document.read_text(), re.M | re.S)
        for index, text in enumerate(texts, 1):
            found.setdefault(text, f"{document.relative_to(ROOT)}:{index}")
    return found
