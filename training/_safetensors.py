"""The safetensors file format, written and read with numpy alone (the package takes no new dependency for it).

The format (huggingface/safetensors, README.md "Format", and safetensors/src/tensor.rs): 8 bytes, the header's
length N as a little-endian unsigned 64-bit integer; N bytes of UTF-8 JSON, {tensor name: {"dtype": "F32",
"shape": [...], "data_offsets": [begin, end]}, "__metadata__": {string: string}} with offsets into the byte
buffer that follows, padded with spaces to a multiple of 8; then the buffer, each tensor's bytes little-endian and
C-ordered, one after the other with no gaps. Written as the reference implementation does (tensor.rs `prepare`):
tensors ordered by descending dtype alignment (the order of its Dtype enum), then by name; the JSON compact, the
metadata first.
"""
from __future__ import annotations

import json
import os
import pathlib
import sys

import numpy as np

# safetensors' dtype names in the order of its Dtype enum (increasing alignment); the ones numpy holds
_ORDER = ("BOOL", "U8", "I8", "I16", "U16", "F16", "BF16", "I32", "U32", "F32", "F64", "I64", "U64")
_NUMPY = {"BOOL": np.bool_, "U8": np.uint8, "I8": np.int8, "I16": np.int16, "U16": np.uint16, "F16": np.float16,
          "I32": np.int32, "U32": np.uint32, "F32": np.float32, "F64": np.float64, "I64": np.int64, "U64": np.uint64}
MAX_HEADER = 100_000_000  # the reference implementation refuses longer headers


class CheckpointError(ValueError):
    """A file that is not a readable safetensors checkpoint: the message names the file and what is wrong."""


def _dtype_name(array: np.ndarray, name: str) -> str:
    import ml_dtypes

    if array.dtype == ml_dtypes.bfloat16:
        return "BF16"
    for key, dtype in _NUMPY.items():
        if array.dtype == np.dtype(dtype):
            return key
    raise TypeError(f"safetensors: tensor {name!r} has dtype {array.dtype}, which the format has no name for "
                    f"(expected one of {', '.join(_ORDER)})")


def _numpy_dtype(name: str):
    if name == "BF16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(_NUMPY[name])


def _little(array: np.ndarray) -> np.ndarray:
    """array with its bytes in little-endian order (swapped on a big-endian machine)."""
    return array.byteswap() if sys.byteorder == "big" and array.dtype.itemsize > 1 else array


def dumps(tensors: dict, metadata: dict | None = None) -> bytes:
    """The safetensors bytes of {name: numpy array} and optional {string: string} metadata."""
    arrays = {name: np.asarray(value) for name, value in tensors.items()}
    kinds = {name: _dtype_name(array, name) for name, array in arrays.items()}
    order = sorted(arrays, key=lambda n: (-_ORDER.index(kinds[n]), n.encode()))
    header, chunks, offset = {}, [], 0
    if metadata:
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
            raise TypeError("safetensors: metadata must map strings to strings")
        header["__metadata__"] = dict(metadata)
    for name in order:
        data = _little(np.ascontiguousarray(arrays[name])).tobytes()
        header[name] = {"dtype": kinds[name], "shape": list(arrays[name].shape), "data_offsets": [offset,
                                                                                                 offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode()
    text += b" " * (-len(text) % 8)
    return len(text).to_bytes(8, "little") + text + b"".join(chunks)


def save(path, tensors: dict, metadata: dict | None = None) -> None:
    """dumps() into the file path (written to a temporary file beside it, then renamed: no half-written file)."""
    file = pathlib.Path(path)
    part = file.with_name(f".{file.name}.part")
    part.write_bytes(dumps(tensors, metadata))
    os.replace(part, file)


def loads(data: bytes, where: str = "safetensors data") -> tuple[dict, dict]:
    """({name: numpy array}, metadata) of safetensors bytes; CheckpointError names what is malformed."""
    def bad(what):
        return CheckpointError(f"{where} is not a safetensors file: {what}")

    if len(data) < 8:
        raise bad(f"{len(data)} bytes, shorter than the 8-byte header length")
    size = int.from_bytes(data[:8], "little")
    if size > MAX_HEADER or 8 + size > len(data):
        raise bad(f"a header length of {size} bytes, beyond the file's {len(data) - 8}")
    try:
        header = json.loads(data[8:8 + size].decode())
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise bad(f"its header is not JSON ({error})") from None
    if not isinstance(header, dict):
        raise bad("its header is not a JSON object")
    metadata = header.pop("__metadata__", None) or {}
    buffer, end, tensors = memoryview(data)[8 + size:], 0, {}
    for name, info in sorted(header.items(), key=lambda item: item[1].get("data_offsets", [0])[0]
                             if isinstance(item[1], dict) else 0):
        try:
            dtype = _numpy_dtype(info["dtype"])
            shape = [int(n) for n in info["shape"]]
            begin, stop = (int(n) for n in info["data_offsets"])
        except (KeyError, TypeError, ValueError) as error:
            raise bad(f"tensor {name!r} has a malformed entry {info!r} ({type(error).__name__}: {error})") from None
        if begin != end or stop - begin != dtype.itemsize * int(np.prod(shape)) or stop > len(buffer):
            raise bad(f"tensor {name!r}'s data_offsets {[begin, stop]} do not follow the previous tensor's end {end} "
                      f"or do not hold {shape} of {info['dtype']}")
        tensors[name] = _little(np.frombuffer(buffer[begin:stop], dtype).reshape(shape)).copy()
        end = stop
    if end != len(buffer):
        raise bad(f"{len(buffer) - end} bytes after the last tensor")
    return tensors, metadata


def load(path) -> tuple[dict, dict]:
    """loads() of the file path."""
    file = pathlib.Path(path)
    if not file.is_file():
        raise CheckpointError(f"cannot read checkpoint {os.fspath(path)!r}: no such file")
    return loads(file.read_bytes(), repr(os.fspath(path)))
