"""``imagenet-suite verify``: re-check a dataset folder against its build_info.json and card."""

from __future__ import annotations

import hashlib

import pyarrow.parquet as pq
import yaml
from tqdm.auto import tqdm

from ..errors import DatasetFolderError, InvalidSourceData
from ..files import sha256_file
from ..images import ImageChecks, inspect_image
from .folder import CARD, DatasetFolder


def verify_folder(
    path, images: ImageChecks | None = None, progress: bool = False, remembered: bool = False
) -> DatasetFolder:
    """Raise DatasetFolderError naming the first file that differs; return the folder if all match.

    Checks: build_info.json's own hash; the card's sha256; every listed file's size and sha256
    (hashed afresh, or with ``remembered`` through the hashes the read path remembers, see
    :func:`imagenet_suite.files.cached_sha256`);
    Parquet row counts against build_info and against the card's ``num_examples``; no unlisted
    Parquet file under a config. With ``images``, also every stored image of every ``Image``
    column (:func:`imagenet_suite.images.inspect_image`: structure, pixel bound, and a full decode
    when ``images.deep``).
    """
    folder = DatasetFolder(path)  # checks build_info.json's own hash
    card_path = folder.path / CARD
    if not card_path.is_file():
        raise DatasetFolderError(f"{card_path}: missing")
    if hashlib.sha256(card_path.read_bytes()).hexdigest() != folder.build_info.get("card_sha256"):
        raise DatasetFolderError(f"{card_path}: sha256 differs from build_info.json (card was modified)")
    card_splits = _card_split_sizes(card_path)
    for config, info in folder.build_info["configs"].items():
        rows_per_split: dict[str, int] = {}
        for rel, meta in info["files"].items():
            file_path = folder.file(rel) if remembered else folder.path / rel
            if not remembered:
                _check_file(file_path, meta)
            if "split" in meta:
                rows = pq.read_metadata(file_path).num_rows
                if rows != meta["num_rows"]:
                    raise DatasetFolderError(f"{file_path}: {rows} rows, build_info.json says {meta['num_rows']}")
                rows_per_split[meta["split"]] = rows_per_split.get(meta["split"], 0) + rows
        listed = {folder.path / rel for rel in info["files"]}
        for stray in sorted((folder.path / config).glob("*.parquet")):
            if stray not in listed:
                raise DatasetFolderError(f"{stray}: not listed in build_info.json (load_dataset would read it)")
        for split, meta in info["splits"].items():
            counted = rows_per_split.get(split, 0)
            if counted != meta["num_examples"] or card_splits.get((config, split)) != meta["num_examples"]:
                raise DatasetFolderError(
                    f"{config}/{split}: Parquet rows {counted}, build_info {meta['num_examples']}, "
                    f"card {card_splits.get((config, split))}"
                )
    if images is not None:
        verify_images(folder, images, progress)
    return folder


def image_columns(features: dict) -> list[str]:
    """Top-level columns of a build_info ``features`` dict that hold ``Image`` values."""
    return [name for name, feature in features.items() if isinstance(feature, dict) and feature.get("_type") == "Image"]


def verify_images(folder: DatasetFolder, checks: ImageChecks, progress: bool = False) -> int:
    """Check every stored image of ``folder``; DatasetFolderError naming file, row id and column. Returns the count."""
    work = [
        (folder.path / rel, meta, column)
        for info in folder.build_info["configs"].values()
        for column in image_columns(info["features"])
        for rel, meta in sorted(info["files"].items())
        if "split" in meta
    ]
    checked = 0
    with tqdm(
        total=sum(meta["num_rows"] for _, meta, _ in work),
        unit="img",
        desc="checking images",
        disable=not progress,
        leave=False,
    ) as bar:
        for path, _, column in work:
            for batch in pq.ParquetFile(path).iter_batches(batch_size=256, columns=["id", column]):
                ids, cells = batch.column("id").to_pylist(), batch.column(column).to_pylist()
                for row_id, cell in zip(ids, cells, strict=True):
                    if cell is None or cell.get("bytes") is None:
                        continue
                    try:
                        inspect_image(cell["bytes"], f"{path}: row {row_id!r}, column {column!r}", checks)
                    except InvalidSourceData as err:
                        raise DatasetFolderError(str(err)) from err
                    checked += 1
                bar.update(len(ids))
    return checked


def _check_file(file_path, meta: dict) -> None:
    if not file_path.is_file():
        raise DatasetFolderError(f"{file_path}: missing")
    size = file_path.stat().st_size
    if size != meta["size"]:
        raise DatasetFolderError(f"{file_path}: size {size} bytes, build_info.json says {meta['size']}")
    digest = sha256_file(file_path)
    if digest != meta["sha256"]:
        raise DatasetFolderError(
            f"{file_path}: sha256 {digest}, build_info.json says {meta['sha256']} (file is corrupt or was modified)"
        )


# The card's YAML front matter is read with libyaml's safe loader where PyYAML has it (its wheels do): the same
# safe constructors and the same result as ``yaml.safe_load``, ten times faster. The front matter lists every
# class name of every config (84 kB for imagenet_val): the pure-Python loader took 0.33 s of each verify (and of
# each build reading a built ``--input``, which verifies it), libyaml 0.03 s.
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _card_split_sizes(card_path) -> dict[tuple[str, str], int]:
    """``{(config, split): num_examples}`` of the card's YAML front matter (read with :data:`_SAFE_LOADER`)."""
    text = card_path.read_text(encoding="utf-8")
    if not text.startswith("---\n") or "\n---" not in text[4:]:
        raise DatasetFolderError(f"{card_path}: no YAML front matter")
    try:
        meta = yaml.load(text[4 : text.index("\n---", 4)], Loader=_SAFE_LOADER)
    except yaml.YAMLError as err:
        raise DatasetFolderError(f"{card_path}: invalid YAML front matter ({err})") from err
    infos = meta.get("dataset_info", [])
    infos = infos if isinstance(infos, list) else [infos]
    return {
        (info.get("config_name", "default"), split["name"]): split["num_examples"]
        for info in infos
        for split in info.get("splits", [])
    }
