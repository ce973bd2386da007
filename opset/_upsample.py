"""Shared by the two nearest-exact ops: attribute checks and the separable backward.

The backward of nearest-exact upsampling is a sum of grad_output over the output
positions that read each input position. Along one axis that is a one-hot
matrix A[out, in]; the 1d and 2d ops are grad_output contracted with A per axis.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from ._common import (
    check_output_size, check_rank, check_scale_attr, compute_dtype, check_float_dtypes, nearest_exact_source_index,
    resolve_input_size,
)


def validate(op: str, spatial: Sequence[str], grad_shape: Optional[Sequence], input_size, output_size,
             scales: Sequence[float]) -> Optional[list]:
    """Checks the attributes against grad_output's shape; returns the grad_input shape (None where unknown)."""
    for name, value in zip(_scale_names(spatial), scales):
        check_scale_attr(op, name, value)
    rank = 2 + len(spatial)
    if grad_shape is None:
        grad_shape = [None] * rank
    check_rank(op, "grad_output", grad_shape, rank, "[N, C, " + ", ".join(f"{s}_out" for s in spatial) + "]")
    check_output_size(op, output_size, grad_shape[2:], spatial)
    return resolve_input_size(op, input_size, grad_shape, spatial)


def _scale_names(spatial: Sequence[str]):
    return ["scales"] if len(spatial) == 1 else [f"scales_{s.lower()}" for s in spatial]


def one_hot_matrix(input_len: int, output_len: int, scale: float, dtype) -> np.ndarray:
    """A[out, in] = 1 where output position `out` reads input position `in`."""
    matrix = np.zeros((output_len, input_len), dtype)
    matrix[np.arange(output_len), nearest_exact_source_index(input_len, output_len, scale)] = 1
    return matrix


def backward(op: str, spatial: Sequence[str], grad_output: np.ndarray, input_size, output_size, scales) -> np.ndarray:
    dtype = check_float_dtypes(op, grad_output=grad_output)
    shape = validate(op, spatial, grad_output.shape, input_size, output_size, scales)
    acc = compute_dtype(dtype)
    grad = grad_output.astype(acc)
    # Contract each spatial axis (last first) with its one-hot matrix: [.., out] @ A -> [.., in].
    for axis in reversed(range(len(spatial))):
        matrix = one_hot_matrix(shape[2 + axis], grad_output.shape[2 + axis], scales[axis], acc)
        grad = np.moveaxis(np.moveaxis(grad, 2 + axis, -1) @ matrix, -1, 2 + axis)
    return grad.astype(dtype)
