"""How metrics walk a large ``[N, C]`` score tensor: row chunks, float32 upcast, probabilities, sorting.

Every metric reads the scores through these helpers, so a 50,000 x 21,843 tensor is never copied
whole: a chunk of rows is upcast to float32 (bf16/fp16 stay compact in memory), turned into what the
metric needs, reduced, and dropped. Chunks are small on the CPU (cache-sized, the fastest there) and
large on a GPU (few kernel launches).

On the CPU an evaluation runs torch single-threaded and spreads whole chunks over worker threads
(:func:`imagenet_suite.scoring.threads.chunk_parallel_cpu`, :func:`map_chunks`): chunk-level
parallelism needs no OpenMP team per operation, which on small or shared machines costs more than
the operations themselves.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

import torch

from .threads import cpu_workers, single_threaded_torch

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


def column_chunks(n_rows: int, n_cols: int, max_elements: int = CPU_CHUNK_ELEMENTS, workers: int = 1) -> list[slice]:
    """Consecutive column slices of at most ``max_elements`` elements (at least one column each), of
    equal width and as many as a multiple of ``workers`` (whole chunks per worker thread: none waits
    for a straggler).

    Example:
        At most 4 columns of 10 rows fit in 40 elements: 8 columns make 2 chunks, or 3 for 3 workers:

        >>> column_chunks(10, 8, max_elements=40)
        [slice(0, 4, None), slice(4, 8, None)]
        >>> column_chunks(10, 8, max_elements=40, workers=3)
        [slice(0, 3, None), slice(3, 6, None), slice(6, 8, None)]
    """
    most = max(1, max_elements // max(1, n_rows))
    count = math.ceil(math.ceil(n_cols / most) / workers) * workers
    step = max(1, math.ceil(n_cols / count))
    return [slice(start, min(n_cols, start + step)) for start in range(0, n_cols, step)]


def as_float32(chunk: torch.Tensor) -> torch.Tensor:
    """The chunk in float32 (float64 is kept: it is already at least as precise)."""
    return chunk if chunk.dtype in (torch.float32, torch.float64) else chunk.float()


def probabilities(chunk: torch.Tensor, kind: str, renormalize: bool = False) -> torch.Tensor:
    """Softmax probabilities of a float32 chunk, applying softmax only to logits.

    ``probs`` come back as they are (no log/exp round trip) unless ``renormalize`` (sliced columns).
    """
    if kind == "logits":
        return torch.softmax(chunk, dim=1)
    if kind == "probs":
        return chunk / chunk.sum(dim=1, keepdim=True) if renormalize else chunk
    return torch.softmax(chunk, dim=1) if renormalize else chunk.exp()


TRANSPOSE_TILE_ELEMENTS = 1 << 15  # a 128 KiB float32 tile: the strided reads stay in cache


def transposed_float32(block: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """A contiguous float32 ``[W, N]`` copy of a ``[N, W]`` (possibly strided) block, in ``out`` if
    given (a contiguous float32 ``[W, N]`` tensor on the block's device: reusing one spares the CPU
    the page faults of a fresh allocation per block).

    Copied in row tiles: one strided copy of a tall block thrashes the cache (measured 6x slower
    on CPU than tiles of ~32K elements).
    """
    n_rows, width = block.shape
    if out is None:
        out = torch.empty((width, n_rows), dtype=torch.float32, device=block.device)
    if block.device.type != "cpu":
        return out.copy_(block.T)
    step = max(64, TRANSPOSE_TILE_ELEMENTS // max(1, width))
    for start in range(0, n_rows, step):
        out[:, start : start + step].copy_(block[start : start + step].T)
    return out


def sort_rows_(values: torch.Tensor) -> torch.Tensor:
    """Each row of a contiguous 2-D tensor sorted ascending, on its device; returns the sorted tensor.

    On the CPU the rows are sorted in place by numpy's vectorized sort (several times faster than
    ``torch.sort`` there); elsewhere a sorted copy comes from ``torch.sort``.
    """
    if values.device.type == "cpu":
        values.numpy().sort(axis=1)
        return values
    return torch.sort(values, dim=1).values


def map_chunks(function: Callable[[slice], object], chunks: Sequence[slice], device: torch.device) -> list:
    """``[function(chunk) for chunk in chunks]``, in order; on the CPU spread over worker threads.

    On the CPU each worker runs torch single-threaded and takes whole chunks: chunk-level
    parallelism needs no OpenMP barrier per operation, which matters on small, shared machines
    (a barrier waits for a descheduled thread). torch and numpy release the GIL inside kernels.
    """
    workers = cpu_workers() if torch.device(device).type == "cpu" else 1
    if workers == 1 or len(chunks) <= 1:
        return [function(chunk) for chunk in chunks]
    inference, grad = torch.is_inference_mode_enabled(), torch.is_grad_enabled()

    def in_callers_mode(chunk: slice) -> object:  # grad and inference modes are thread-local
        with torch.inference_mode(inference), torch.set_grad_enabled(grad):
            return function(chunk)

    with single_threaded_torch(), ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(in_callers_mode, chunks))
