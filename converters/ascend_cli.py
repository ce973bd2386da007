"""The `resample-grad convert` command and the demo's Ascend column (the converter is ascend.py).

    resample-grad convert MODEL --target ascend --soc SOC -o DIR [--cast] [--fallback node|all] [--wide-modes]
        [--native-half]
    resample-grad convert model.ascend.onnx --from ascend -o MODEL.onnx
    resample-grad convert MODEL --target portable -o OUT.onnx [--scatter-free]  (portable_cli.py)
"""
from __future__ import annotations

import onnx

from resample_grad import opset

from . import ascend_prototypes as protos
from . import portable_cli
from .ascend import SOC_DEFAULT, from_ascend, to_ascend


def add_cli(sub) -> None:
    convert = sub.add_parser(
        "convert", help="convert a model for Ascend ATC, or back, or to standard ONNX only",
        description="ONNX models with resample_grad ops to Ascend ATC, and back. --target ascend writes "
                    "model.ascend.onnx, the ATC parser plugin, the GE IR graph, atc.sh and report.json into the -o "
                    "folder; --from ascend turns a model.ascend.onnx back into a model with resample_grad ops; "
                    "--target portable writes the model with every resample_grad node replaced by its standard-ONNX "
                    "body (opset.inline) to the -o .onnx file.")
    convert.add_argument("model", help="an .onnx model (with --from ascend: a model.ascend.onnx)")
    direction = convert.add_mutually_exclusive_group()
    direction.add_argument("--target", choices=["ascend", "portable"],
                           help="convert to this target (default: ascend, unless --from)")
    direction.add_argument("--from", dest="source", choices=["ascend"], help="convert a model written by --target "
                           "ascend back to the resample_grad ops")
    convert.add_argument("--soc", help=f"the ATC SoC name, a concrete one, not a family (default: {SOC_DEFAULT}); "
                         f"accepted: {protos.known_socs()}")
    convert.add_argument("-o", "--output", required=True, metavar="DIR|FILE.onnx",
                         help="--target ascend: the output folder, created if missing; --target portable and --from: "
                              "the output .onnx file")
    convert.add_argument("--cast", action="store_true",
                         help="insert Cast nodes around ops whose dtype the device lacks")
    convert.add_argument("--fallback", choices=["node", "all"],
                         help="node: replace nodes the device cannot run with their standard-ONNX function body; "
                              "all: lower the whole model to standard ONNX, no plugin needed "
                              "(default: neither, a node the device cannot run is an error)")
    convert.add_argument("--wide-modes", action="store_true", help="accept bicubic / reflection (newer CANN releases)")
    convert.add_argument("--native-half", action="store_true",
                         help="keep float16 / bfloat16 GE ops in their dtype (default: Cast to float32 around them, "
                              "as aclnn does; the kernels keep weights and partial sums in the input dtype, less "
                              "precise)")
    convert.add_argument("--scatter-free", action="store_true",
                         help="--target portable: grid samplers by dense MatMuls, no ScatterElements (for runtimes "
                              "without a scatter-add: onnx2tf / TFLite; memory grows with grid points x pixels)")
    convert.set_defaults(func=_cmd_convert)


def _cmd_convert(args) -> int:
    from resample_grad.cli import output_file, output_folder, progress, write_atomically
    from resample_grad.paths import CliError, load_model

    if args.source == "ascend" or args.target == "portable":
        given = [flag for flag, value in (("--soc", args.soc), ("--cast", args.cast), ("--fallback", args.fallback),
                                          ("--wide-modes", args.wide_modes),
                                          ("--native-half", args.native_half)) if value]
        if given:
            raise CliError(f"convert: {', '.join(given)} {'applies' if len(given) == 1 else 'apply'} only to "
                           f"--target ascend, not to {'--from ascend' if args.source else '--target portable'}")
    if args.scatter_free and args.target != "portable":
        raise CliError("convert: --scatter-free applies only to --target portable")
    if args.target == "portable":
        return portable_cli.convert(args)
    if args.source == "ascend":
        out = output_file(args.output, ".onnx", "convert --from ascend: -o")
        model = load_model(args.model, converted_ok=True)
        back = from_ascend(model)
        write_atomically(out, lambda handle: handle.write(back.SerializeToString()))
        ops = sorted({n.op_type for n in back.graph.node if n.domain == opset.DOMAIN})
        print(f"wrote {out}: {len(back.graph.node)} nodes, resample_grad ops {', '.join(ops) or 'none'}")
        return 0
    out = output_folder(args.output, "convert: -o")
    try:
        soc = protos.resolve_soc(args.soc or SOC_DEFAULT)[0]
    except ValueError as error:
        raise CliError(f"convert: {error}") from None
    model = load_model(args.model, converted_ok=True)  # to_ascend names an already converted model itself
    progress(f"converting {args.model} for {soc}")
    # every check runs before the first file is written: a refused model leaves nothing behind
    conversion = to_ascend(model, soc=soc, out_dir=out, cast=args.cast, fallback=args.fallback,
                           wide_modes=args.wide_modes, native_half=args.native_half)
    print(conversion.summary())
    return 0


def demo_conversion(model: onnx.ModelProto, out_dir) -> str:
    """The demo's Ascend column: convert for an A2 SoC, falling back per node where the device cannot run it."""
    conversion = to_ascend(model, soc="Ascend910B1", out_dir=out_dir, fallback="node")
    fallen = sum(1 for r in conversion.nodes if r.action.startswith("fallback"))
    return f"{len(conversion.nodes) - fallen} GE op(s)" + (f", {fallen} fallback" if fallen else "")
