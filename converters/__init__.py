"""Converters: PyTorch programs and ONNX forward graphs in, Ascend ATC graphs out."""
