"""How metrics walk a large ``[N, C]`` score tensor: row chunks, float32 upcast, probabilities, sorting.

Every metric reads the scores through these helpers, so a 50,000 x 21,843 tensor is never copied
whole: a chunk of rows is upcast to float32 (bf16/fp16 stay compact in memory), turned into what the
metric needs, reduced, and dropped. Chunks are small on the CPU (cache-sized, the fastest there) and
large on a GPU (few kernel launches).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch

CPU_CHUNK_ELEMENTS = 1 << 19  # 2 MiB of float32: stays in cache, measured fastest on CPU
GPU_CHUNK_ELEMENTS = 1 << 26  # 256 MiB of float32


def chunk_elements(device: torch.device | str) -> int:
    """Number of score elements one chunk holds on ``device``."""
    return CPU_CHUNK_ELEMENTS if torch.device(device).type == "cpu" else GPU_CHUNK_ELEMENTS


def row_chunks(n_rows: int, n_cols: int, max_elements: int = CPU_CHUNK_ELEMENTS) -> Iterator[slice]:
    """Consecutive row slices of at most ``max_elements`` elements (at least one row each)."""
    step = max(1, max_elements // max(1, n_cols))
    for start in range(0, n_rows, step):
        yield slice(start, min(n_rows, start + step))


def column_chunks(n_rows: int, n_cols: int, max_elements: int = CPU_CHUNK_ELEMENTS) -> Iterator[slice]:
    """Consecutive column slices of at most ``max_elements`` elements (at least one column each)."""
    return row_chunks(n_cols, n_rows, max_elements)


def as_float32(chunk: torch.Tensor) -> torch.Tensor:
    """The chunk in float32 (float64 is kept: it is already at least as precise)."""
    return chunk if chunk.dtype in (torch.float32, torch.float64) else chunk.float()


def log_space(chunk: torch.Tensor, kind: str) -> torch.Tensor:
    """Scores whose softmax is the model's distribution: logits and log_probs as they are, log(probs)."""
    return chunk.log() if kind == "probs" else chunk


def log_normalizer(chunk: torch.Tensor, kind: str, renormalize: bool) -> torch.Tensor:
    """Per-row ``c`` with ``probs = exp(log_space(chunk) - c)``: logsumexp, or 0 when already normalized.

    ``renormalize`` is True when columns were sliced (a class subset), so probs/log_probs must be
    renormalized over the kept columns.
    """
    if kind == "logits" or renormalize:
        return torch.logsumexp(log_space(chunk, kind), dim=1)
    return torch.zeros(chunk.shape[0], dtype=chunk.dtype, device=chunk.device)


def probabilities(chunk: torch.Tensor, kind: str, renormalize: bool = False) -> torch.Tensor:
    """Softmax probabilities of a float32 chunk, applying softmax only to logits.

    ``probs`` come back as they are (no log/exp round trip) unless ``renormalize`` (sliced columns).
    """
    if kind == "logits":
        return torch.softmax(chunk, dim=1)
    if kind == "probs":
        return chunk / chunk.sum(dim=1, keepdim=True) if renormalize else chunk
    return torch.softmax(chunk, dim=1) if renormalize else chunk.exp()


def sort_rows(values: torch.Tensor) -> torch.Tensor:
    """Each row sorted ascending, on the tensor's device.

    On the CPU this uses numpy's vectorized sort on the same memory (several times faster than
    ``torch.sort`` there); elsewhere ``torch.sort``.
    """
    if values.device.type == "cpu":
        return torch.from_numpy(np.sort(values.numpy(), axis=1))
    return torch.sort(values, dim=1).values


def cpu_workers() -> int:
    """Threads for work that releases the GIL (numpy sort): torch's thread count, at least 1."""
    return max(1, min(torch.get_num_threads(), os.cpu_count() or 1))


def map_chunks(function: Callable[[slice], object], chunks: Sequence[slice], device: torch.device) -> list:
    """``[function(chunk) for chunk in chunks]``, spread over CPU threads when on the CPU."""
    workers = cpu_workers() if device.type == "cpu" else 1
    if workers == 1 or len(chunks) == 1:
        return [function(chunk) for chunk in chunks]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(function, chunks))
