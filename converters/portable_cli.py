"""`resample-grad convert MODEL --target portable -o OUT.onnx [--scatter-free]`: the model in standard ONNX only
(opset.inline)."""
from __future__ import annotations

from resample_grad import opset


def convert(args) -> int:
    """(ascend_cli._cmd_convert has refused the Ascend options.)"""
    from resample_grad.cli import output_file, progress, write_atomically
    from resample_grad.paths import CliError, load_model

    out = output_file(args.output, ".onnx", "convert --target portable: -o")
    model = load_model(args.model)
    progress(f"inlining the resample_grad ops of {args.model}")
    try:
        portable = opset.inline(model, scatter_free=args.scatter_free)
    except opset.ResampleGradError as error:
        raise CliError(f"convert: {error}") from None
    write_atomically(out, lambda handle: handle.write(portable.SerializeToString()))
    ops = sorted({n.op_type for n in portable.graph.node})
    print(f"wrote {out}: {len(portable.graph.node)} nodes of standard ONNX opset "
          f"{next(o.version for o in portable.opset_import if o.domain in ('', 'ai.onnx'))} ({', '.join(ops)})")
    return 0
