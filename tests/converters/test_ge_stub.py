"""tests/ge_stub against CANN's real headers: each stub header cites the real one it was copied from, and, given a
copy of CANN's include folders (RESAMPLE_GRAD_CANN_INCLUDE=DIR:DIR...), every stub declaration is found there, the
stated enumerator values hold there, the converter's table matches each REG_OP found there, and the files the
converter generates for every demo model compile there with no warning (tests/ge_stub/README.md)."""
from __future__ import annotations

import os
import pathlib
import re

import pytest

from conftest import GE_STUB, check_against_cann, ge_onnx_pb
from resample_grad import models
from resample_grad.converters import ascend, ascend_cpp
from resample_grad.converters.ascend_prototypes import ALL_PROTOTYPES as PROTOTYPES

CANN = [pathlib.Path(d) for d in os.environ.get("RESAMPLE_GRAD_CANN_INCLUDE", "").split(":") if d]
needs_cann = pytest.mark.skipif(not CANN, reason="CANN's headers are not public on PyPI or Debian, so CI has no copy: "
                                                  "set RESAMPLE_GRAD_CANN_INCLUDE to their include folders "
                                                  "(tests/ge_stub/README.md)")
REAL_REPOS = {"hicann/ge", "hicann/metadef"}


def test_every_stub_header_cites_the_real_header_it_copies():
    headers = check_against_cann.stub_headers()
    assert len(headers) >= 12
    for header in headers:
        cited = check_against_cann.citations(header)
        assert cited, f"{header} cites no real header"
        assert all(repo in REAL_REPOS and re.fullmatch(r"[0-9a-f]{40}", commit) for repo, commit, _ in cited), header


def test_every_stub_declaration_is_checked():
    """The checker sees every declaration of the stub (a parsing slip would make the real-header check vacuous)."""
    lines = {h: check_against_cann.declarations(h) for h in check_against_cann.stub_headers()}
    assert sum(map(len, lines.values())) >= 150
    operator = lines[GE_STUB / "graph" / "operator.h"]
    assert "Operator &SetInput(const char_t *dst_name, const Operator &src_oprt, const char_t *name);" in operator
    assert "graphStatus UpdateInputDesc(const char_t *name, const TensorDesc &tensor_desc);" in operator


def test_the_stated_values_compile_against_the_stubs(tmp_path):
    failures = check_against_cann.compile_against([GE_STUB / "values.cc"], [GE_STUB], ge_onnx_pb())
    assert not failures, failures


@needs_cann
def test_the_stubs_match_the_real_headers():
    assert check_against_cann.missing_declarations(CANN) == {}
    assert check_against_cann.compile_against([GE_STUB / "values.cc"], CANN, ge_onnx_pb()) == {}


@needs_cann
def test_the_table_matches_every_reg_op_found():
    assert check_against_cann.table_disagreements(check_against_cann.reg_ops(CANN, set(PROTOTYPES))) == {}


@needs_cann
def test_generated_files_compile_against_the_real_headers(tmp_path):
    sources = []
    for name in models.BUILDERS:
        try:
            conversion = ascend.to_ascend(models.BUILDERS[name](), soc="Ascend950PR" if name in (
                "resize_bicubic_v2_grad", "resize_linear_grad") else "Ascend910B1", out_dir=tmp_path / name)
        except ascend.ResampleGradError:
            continue
        sources += [pathlib.Path(p) for key, p in conversion.files.items() if key in ("plugin", "graph")]
    (tmp_path / "all").mkdir()
    (tmp_path / "all" / ascend_cpp.PLUGIN_FILE).write_text(ascend_cpp.plugin_source(sorted(PROTOTYPES)))
    sources.append(tmp_path / "all" / ascend_cpp.PLUGIN_FILE)
    assert len(sources) >= 30
    assert check_against_cann.compile_against(sources, CANN, ge_onnx_pb()) == {}
