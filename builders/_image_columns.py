"""The image columns that every image dataset of imagenet-suite shares, and how a row of them is made.

Columns, around a builder's own ones: ``id``, ``file_name``, ``image`` (the original bytes, with the
file name as ``path``), *the builder's columns*, then ``image_mode`` (PIL mode), ``width`` and
``height`` (pixels), read from the image's header after :func:`imagenet_suite.images.inspect_image`
checked it. ImageNet-val, the variant releases (A, R, O, Sketch, V2, C, ObjectNet) and the
shape-bias sets have these columns.
"""

from __future__ import annotations

from typing import Any

from imagenet_suite.images import inspect_image


def image_features(extra: dict[str, Any]):
    """``datasets.Features``: id, file_name, image, the ``extra`` columns, image_mode, width, height."""
    from datasets import Features, Image, Value

    return Features(
        {
            "id": Value("string"),
            "file_name": Value("string"),
            "image": Image(),
            **extra,
            "image_mode": Value("string"),
            "width": Value("int32"),
            "height": Value("int32"),
        }
    )


def image_row(image_id: str, data: bytes, file_name: str, where: str) -> dict[str, Any]:
    """The shared columns of one row (the builder adds its own): ``data`` is checked by
    :func:`~imagenet_suite.images.inspect_image` (InvalidSourceData naming ``where``) and stored as is."""
    header = inspect_image(data, where)
    return {
        "id": image_id,
        "file_name": file_name,
        "image": {"bytes": data, "path": file_name},
        "image_mode": header.mode,
        "width": header.width,
        "height": header.height,
    }
