"""Tiny datasets for trying the library offline and for examples (as ``tfds.testing`` or ``numpy.testing``).

:func:`write_val_images` lays out a few small JPEGs exactly as the ImageNet validation release's
ImageFolder layout (``val/<wnid>/ILSVRC2012_val_<n>.JPEG``) that the ``imagenet_val`` builder reads
from ``--manual-dir``; :func:`tiny_val_build` builds them into a real ``imagenet_val`` dataset folder.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

TINY_WNIDS = ("n01440764", "n01443537")  # classes 0 and 1 of the sorted ImageNet-1k wnids


def write_val_images(root: str | Path, wnids: Sequence[str] = TINY_WNIDS, size: tuple[int, int] = (8, 8)) -> Path:
    """Write one black ``size`` (width, height in pixels) JPEG per wnid, numbered from 1, under
    ``root/val/<wnid>/``; return ``root`` (a manual folder for ``imagenet_val``).

    Example:
        >>> import tempfile
        >>> root = write_val_images(tempfile.mkdtemp())
        >>> sorted(path.relative_to(root).as_posix() for path in root.rglob("*.JPEG"))
        ['val/n01440764/ILSVRC2012_val_00000001.JPEG', 'val/n01443537/ILSVRC2012_val_00000002.JPEG']
    """
    from PIL import Image

    root = Path(root)
    for number, wnid in enumerate(wnids, start=1):
        image = root / "val" / wnid / f"ILSVRC2012_val_{number:08d}.JPEG"
        image.parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", size).save(image)
    return root


def tiny_val_build(root: str | Path, wnids: Sequence[str] = TINY_WNIDS) -> Path:
    """``imagenet_val`` (default config) built from :func:`write_val_images` under ``root`` (``root/manual``
    and ``root/out``); the dataset folder. One image per wnid, labelled with its class index.

    Example:
        >>> import tempfile
        >>> from imagenet_suite.dataset import DatasetFolder
        >>> folder = tiny_val_build(tempfile.mkdtemp())
        >>> DatasetFolder(folder).read_table("default", "validation", ["id", "label"]).to_pydict()
        {'id': ['ILSVRC2012_val_00000001', 'ILSVRC2012_val_00000002'], 'label': [0, 1]}
    """
    from .core.options import BuildOptions
    from .core.runner import build_dataset

    root = Path(root)
    manual = write_val_images(root / "manual", wnids)
    return build_dataset("imagenet_val", root / "out", options=BuildOptions(manual_dir=manual, progress=False))


__all__ = ["TINY_WNIDS", "tiny_val_build", "write_val_images"]
