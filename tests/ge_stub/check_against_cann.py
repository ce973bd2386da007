"""Checks the stub headers of this folder against CANN's real ones, and compiles the generated files against them.

    python tests/ge_stub/check_against_cann.py DIR[:DIR...]

Run it where resample_grad is installed. DIR...: CANN's include folders, as given to the compiler, for example
from checkouts of the public repositories hicann/ge (inc/external, inc/graph_metadef/external, inc/graph_metadef,
inc) and hicann/metadef (inc/external, inc, pkg_inc), or a CANN toolkit's include folder.
tests/converters/test_ge_stub.py runs the same checks when RESAMPLE_GRAD_CANN_INCLUDE holds that list.

Folders holding REG_OP headers (a toolkit's op_proto/inc, or ops-cv's image/*/op_graph and common/inc/op_graph)
may be added: each GE op whose REG_OP is found there is compared with the converter's table (inputs, outputs,
attribute names, types and which are required).

Each stub header names the real header it was copied from ("from: <repo>@<commit> <path>"). Every declaration
line of the stub must occur in that real header, token for token once comments, line breaks and the
visibility macros are taken out; lines marked "stand-in" (private members the recording implementation needs) and
enumerator values (checked by values.cc, which is compiled against the real headers) are skipped.
"""
from __future__ import annotations

import pathlib
import re
import subprocess
import sys
import tempfile
from collections.abc import Sequence

HERE = pathlib.Path(__file__).parent
CITATION = re.compile(r"^// (?:from: )?(hicann/[\w-]+)@([0-9a-f]{40}) (\S+)$", re.M)
# macros of CANN's headers that carry no signature: visibility and inlining
NOISE = re.compile(r"\b(?:GE_FUNC_DEV_VISIBILITY|GE_FUNC_HOST_VISIBILITY|FMK_FUNC_HOST_VISIBILITY|"
                   r"FMK_FUNC_DEV_VISIBILITY|GE_FUNC_VISIBILITY|FORCE_INLINE)\b")
SKIP = re.compile(r"^\s*(?:#|//|$|namespace\b|}|public:|private:|protected:|class \w+;|struct \w+;)")
ENUMERATOR = re.compile(r"^\s*\w+(?: = [\w:]+)?,?$")  # one enumerator a line: values.cc checks them


def stub_headers() -> list[pathlib.Path]:
    return sorted(p for p in HERE.rglob("*.h") if p.name != "recording.h")


def citations(header: pathlib.Path) -> list[tuple[str, str, str]]:
    """(repository, commit, path) of each real header a stub header was copied from."""
    return CITATION.findall(header.read_text())


def normalize(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = NOISE.sub(" ", text)
    text = re.sub(r"\s+", " ", text)
    return re.sub(r" ?([(),;&*<>{}=:]) ?", r"\1", text).strip()


def declarations(header: pathlib.Path) -> list[str]:
    """The stub's declaration lines that must occur in the real header, continuation lines joined."""
    out, pending = [], ""
    for line in header.read_text().splitlines():
        if "stand-in" in line or SKIP.match(line) or (not pending and ENUMERATOR.match(line)):
            continue
        pending = f"{pending} {line}" if pending else line
        if pending.count("(") == pending.count(")") and not pending.rstrip().endswith((",", "\\")):
            out.append(pending.strip())
            pending = ""
    return out


def find_real(path: str, include_dirs: Sequence[pathlib.Path]) -> pathlib.Path | None:
    """The real header a citation names: the longest tail of its repository path under an include folder."""
    parts = pathlib.PurePosixPath(path).parts
    for start in range(len(parts)):
        for directory in include_dirs:
            candidate = directory.joinpath(*parts[start:])
            if candidate.is_file():
                return candidate
    return None


def missing_declarations(include_dirs: Sequence[pathlib.Path]) -> dict[str, list[str]]:
    """{stub header: its declarations found in none of the real headers it cites} (and unfound real headers)."""
    problems = {}
    for header in stub_headers():
        reals = [find_real(path, include_dirs) for _, _, path in citations(header)]
        name = str(header.relative_to(HERE))
        if not reals or None in reals:
            problems[name] = [f"real header not found: {path}" for (_, _, path), real in
                              zip(citations(header), reals, strict=True) if real is None] or ["cites no real header"]
            continue
        text = " ".join(normalize(r.read_text(errors="replace")) for r in reals)
        missing = [d for d in declarations(header) if normalize(d) not in text]
        if missing:
            problems[name] = missing
    return problems


REG_OP = re.compile(r"REG_OP\((\w+)\)(.*?)\.OP_END_FACTORY_REG\(\1\)", re.S)
PORT = re.compile(r"\.(INPUT|OPTIONAL_INPUT|OUTPUT)\((\w+),")
ATTR = re.compile(r"\.(ATTR|REQUIRED_ATTR)\((\w+), (\w+)")


def reg_ops(include_dirs: Sequence[pathlib.Path], wanted) -> dict[str, tuple[list, list, list]]:
    """{op type: (inputs, outputs, [(attribute, GE type, required)])} of each wanted op's REG_OP found in the
    headers under the include folders (a CANN toolkit's op_proto/inc, or ops-cv's image/*/op_graph)."""
    found = {}
    for directory in include_dirs:
        for header in directory.rglob("*.h"):
            text = header.read_text(errors="replace")
            if "REG_OP(" not in text:
                continue
            for name, body in REG_OP.findall(text):
                if name in wanted and name not in found:
                    ports = PORT.findall(body)
                    found[name] = ([p for kind, p in ports if kind != "OUTPUT"],
                                   [p for kind, p in ports if kind == "OUTPUT"],
                                   [(a, t, kind == "REQUIRED_ATTR") for kind, a, t in ATTR.findall(body)])
    return found


def table_disagreements(found: dict[str, tuple[list, list, list]]) -> dict[str, str]:
    """{GE op: how the converter's table differs from its REG_OP} for each GE op whose REG_OP was found."""
    from resample_grad.converters.ascend_prototypes import ALL_PROTOTYPES as PROTOTYPES

    out = {}
    for name, (inputs, outputs, attrs) in found.items():
        proto = PROTOTYPES[name]
        table = (list(proto.inputs), list(proto.outputs), [(a.name, a.ge_type, a.required) for a in proto.attrs])
        if table != (inputs, outputs, attrs):
            out[name] = f"table {table} != REG_OP {(inputs, outputs, attrs)}"
    return out


def compile_against(sources: Sequence[pathlib.Path], include_dirs: Sequence[pathlib.Path],
                    generated_include: pathlib.Path) -> dict[str, str]:
    """{source: compiler output} for each source that does not compile cleanly (-Wall -Werror) against the real
    headers; `generated_include` holds onnx/proto/ge_onnx.pb.h."""
    flags = [f"-I{d}" for d in include_dirs] + [f"-I{generated_include}"]
    failures = {}
    for source in sources:
        result = subprocess.run(["g++", "-std=c++17", "-fsyntax-only", "-Wall", "-Werror", *flags, str(source)],
                                capture_output=True, text=True)
        if result.returncode != 0:
            failures[str(source)] = result.stderr
    return failures


def protoc(out: pathlib.Path) -> pathlib.Path:
    subprocess.run(["protoc", f"--cpp_out={out}", f"-I{HERE}", str(HERE / "onnx/proto/ge_onnx.proto")], check=True)
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    include_dirs = [pathlib.Path(d) for d in argv[1].split(":") if d]
    problems = missing_declarations(include_dirs)
    for header, lines in problems.items():
        for line in lines:
            print(f"{header}: not in the real header: {line}")
    with tempfile.TemporaryDirectory() as tmp:
        failures = compile_against([HERE / "values.cc"], include_dirs, protoc(pathlib.Path(tmp)))
    for source, output in failures.items():
        print(f"{source}:\n{output}")
    from resample_grad.converters.ascend_prototypes import ALL_PROTOTYPES as PROTOTYPES

    found = reg_ops(include_dirs, set(PROTOTYPES))
    disagreements = table_disagreements(found)
    for name, why in disagreements.items():
        print(f"converters/ascend_prototypes.py {name}: {why}")
    count = sum(len(declarations(h)) for h in stub_headers())
    print(f"{count} stub declarations in {len(stub_headers())} headers; "
          f"{sum(len(v) for v in problems.values())} not in the real headers; values.cc "
          f"{'does not compile' if failures else 'compiles'} against them; {len(found)} GE ops' REG_OP found, "
          f"{len(disagreements)} disagreeing with the converter's table")
    return 1 if problems or failures or disagreements else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
