"""``patchml``: PatchML (Anzaku et al. 2024), multi-label composites of ImageNet-val object boxes, regenerated from a seed.

**Stage 1, the patch pool.** Every object box of the ImageNet validation split is one patch. The boxes
come from a built ``imagenet_val`` dataset with the ``boxes`` config (``--input DIR``) or from any
``imagenet_val`` manual layout with a box file (``--manual-dir DIR``, read by ``ImagenetVal("boxes")``).
The pool order is canonical, so every layout and box file gives the same pool: images by id, and the
boxes of one image sorted by (class index, xmin, ymin, xmax, ymax). ``box_index`` is a box's place in
that order, counted before any box is dropped. A box is the pixel region ``[xmin, xmax) × [ymin, ymax)``
of the stored image (the PIL crop convention; no EXIF rotation is applied, since the boxes are in
stored-pixel coordinates). Option ``bad_boxes`` decides what happens to boxes that
are zero-area or reach outside their image (``clip``, ``skip`` or ``error``), and ``min_box_side`` drops
boxes whose shorter side (after clipping) is below it. Every dropped or clipped box is counted in
``counts.json`` and on the card.

**Stage 2, Algorithm 1** (Anzaku et al. 2024, Appendix A), for each ``(k, p)`` of the grid (paper: ``F = 512``,
``K = [2, 3, 4, 6, 9]``, ``P = [256, 256, 256, 170, 128]``):

* validity: ``k·p² ≤ F²`` and ``k ≤ c²`` with ``c = ⌊F/p⌋``, otherwise ConfigError "Configuration invalid";
* **the pool is reset for each k**, as Table 2 implies: a uniform permutation of the whole pool from
  ``example_rng(seed, "patchml-pool", k)`` is cut into consecutive groups of k. This is sampling without
  replacement. ``⌊N/k⌋`` composites, numbered ``j = 0, 1, …``; the ``N mod k`` leftovers are dropped;
* patch ``i`` of a composite goes to grid cell ``(⌊i/c⌋, i mod c)`` (row-major). It is cropped, converted
  to RGB (grayscale and CMYK sources too, with PIL's ``convert("RGB")``), and resized with PIL bicubic
  (antialiased when shrinking) so that it fits the ``p×p`` box with its aspect ratio kept. Small boxes
  are **up**-scaled as well as large ones down-scaled. The long side becomes exactly ``p``; the short side
  is ``round_half_up(short·p/long)`` and at least 1;
* a uniform integer offset inside the cell: ``x_off ~ U{0..p−w}``, then ``y_off ~ U{0..p−h}``, drawn
  patch by patch from ``example_rng(seed, "patchml", k, j)``. The patch is pasted at
  ``(col·p + x_off, row·p + y_off)`` on a black ``F×F`` RGB canvas. Cells never overlap, so every patch
  is placed (Algorithm 1's cell and boundary checks cannot fail once the configuration is valid);
* ``labels`` is the set of the placed patches' classes, sorted. Option ``duplicates`` sets what to do
  when two patches share a class. ``union`` (the paper) keeps the composite with fewer labels than
  patches. ``drop`` removes such composites (the remaining ones keep their ``j``). ``resample`` builds
  each composite from the first patches of the permuted pool whose classes are distinct; a patch that
  would repeat a class waits, in order, for the next composite. Under ``resample`` the ``j`` values are
  consecutive.

The same seed gives byte-identical shards for any ``--num-proc``, because every composite is a pure
function of (pool, seed, k, j). Images are encoded once: PNG by default (lossless, PIL
``compress_level=6``, no metadata chunks), or JPEG with a fixed quality, 4:4:4 chroma sampling, baseline
and not optimized. Encoded bytes depend on the Pillow/zlib/libjpeg versions, which the card records;
the pixels do not.

**Recipe.** The ``recipe`` config holds the same rows without pixels. Each patch carries its source
``id``, ``box_index``, the box as cropped, its cell, its offset, its canvas position and its resized
size. Recomposing is therefore code-free: crop, convert to RGB, bicubic-resize, paste, encode.
:func:`materialise` (or ``imagenet-suite build patchml --config images --seed S --input RECIPE_DIR
--input VAL_DIR``) rebuilds the ``images`` config from a recipe and the val source without drawing any
random number. It checks every recipe patch against the val source's pool, and gives the same rows and
image bytes as building from the seed.

Only the val boxes are supported. Train boxes (``LOC_train_solution.csv``) would put *training* images
into an evaluation set; this version does not read them.
"""

from __future__ import annotations

import collections
import csv
import io
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from imagenet_suite import classes
from imagenet_suite.core.builder import Builder, BuilderConfig, Option, Prepared, Shard
from imagenet_suite.core.sources import ResolvedSource, SourceResolver
from imagenet_suite.errors import ConfigError, DatasetFolderError, InvalidSourceData, param
from imagenet_suite.files import read_text
from imagenet_suite.images.codec import Encoding, encode, encoder_versions

from ._citations import ANZAKU_2024, ILSVRC, cite
from .imagenet_val import ACCEPTED_LAYOUTS, ImagenetVal

if TYPE_CHECKING:
    import numpy as np
    from PIL import Image

    from imagenet_suite.core.options import BuildOptions
    from imagenet_suite.dataset.folder import DatasetFolder

# NumPy, Pillow, Parquet (DatasetFolder) and the picture grid are imported in the functions that use them:
# ``imagenet-suite list``/``info`` import this module for the builder's metadata only

from ._patchml_algorithm import (  # re-exported: the builder module's API
    BAD_BOX_POLICIES,
    BOX_KEYS,
    DEFAULT_CANVAS,
    DEFAULT_GRID,
    DUPLICATE_POLICIES,
    EXAMPLES_PER_K,
    IMAGE_FORMATS,
    PROVENANCE_COLUMNS,
    RESAMPLE,
    SPLIT,
    VAL_BUILD_HINT,
    ImageBoxes,
    Pool,
    assign_patches,
    build_pool,
    check_configuration,  # noqa: F401
    compose,
    composite_id,
    encoding_of,
    fit_size,  # noqa: F401
    parse_composite_id,
    parse_grid,
    place,
)
from ._patchml_sources import (
    FolderImages,
    LayoutImages,
    val_from_folder,
    val_from_layout,
)

# ============================================================================= the builder


class ValSource(NamedTuple):
    """What ``PatchML.prepare`` reads the val split from."""

    sources: dict[str, ResolvedSource]
    reader: FolderImages | LayoutImages
    images: Iterator[ImageBoxes]  # (id, width, height, boxes), by id
    description: str  # for the card (no local paths)
    where: str  # for error messages (with the path)


class PatchML(Builder):
    NAME = "patchml"
    VERSION = "1.0.0"
    RELEASE_NOTES = {
        "1.0.0": "Initial release: PatchML composites of the ImageNet-val object boxes (Algorithm 1 of "
        "Anzaku et al. with the pool reset for each k), images and recipe configs."
    }
    CONFIGS = (
        BuilderConfig(
            "images",
            "512x512 composites (PNG by default), label sets and per-patch provenance",
            shard_size=500,
            row_group_rows=50,
        ),
        BuilderConfig(
            "recipe",
            "the same rows without pixels: per-patch provenance to recompose every composite",
            shard_size=100_000,
            row_group_rows=10_000,
        ),
    )
    SOURCES = ImagenetVal.SOURCES
    OPTIONS = {
        "duplicates": Option(
            "union",
            DUPLICATE_POLICIES,
            "patches of one class in a composite: union (paper: labels = set, may be < k), "
            "drop (remove such composites), resample (only distinct classes per composite)",
        ),
        "min_box_side": Option(
            0, None, "drop boxes whose shorter side is below this many pixels (0 = keep all, paper)"
        ),
        "bad_boxes": Option(
            "clip",
            BAD_BOX_POLICIES,
            "zero-area boxes / boxes reaching outside their image: clip (clip to the image, drop "
            "empty), skip (drop), error (stop naming the box); every case is counted",
        ),
        "image_format": Option("png", IMAGE_FORMATS, "png (lossless) or jpeg (quality jpeg_quality, 4:4:4)"),
        "jpeg_quality": Option(95, None, "JPEG quality 1..100 when image_format=jpeg"),
        "grid": Option(DEFAULT_GRID, None, "k:p entries of Algorithm 1 (paper: 2:256,3:256,4:256,6:170,9:128)"),
        "canvas": Option(DEFAULT_CANVAS, None, "side F of the square black canvas in pixels (paper: 512)"),
    }
    SEEDED = True
    MANUAL_DOWNLOAD_INSTRUCTIONS = (
        "Pass a built imagenet_val dataset with the boxes config with --input DIR, or put "
        f"one of these layouts in --manual-dir:\n{ACCEPTED_LAYOUTS}"
    )
    HOMEPAGE = "https://arxiv.org/abs/2412.18409"
    LICENSE = "other"
    CITATION = cite(ANZAKU_2024, ILSVRC)

    def __init__(
        self,
        config: str | None = None,
        *,
        seed: int = 0,
        options: dict[str, Any] | None = None,
        shard_size: int | None = None,
    ):
        super().__init__(config, seed=seed, options=options, shard_size=shard_size)
        if self.options["min_box_side"] < 0:
            raise ConfigError(f"option min_box_side={self.options['min_box_side']}: expected an integer ≥ 0")
        if not 1 <= self.options["jpeg_quality"] <= 100:
            raise ConfigError(f"option jpeg_quality={self.options['jpeg_quality']}: expected an integer in 1..100")
        self.grid = parse_grid(self.options["grid"], self.options["canvas"])

    # -- schema ------------------------------------------------------------------------------------------------
    def features(self):
        from datasets import Features, List, Value
        from datasets import Image as ImageFeature

        label = classes.imagenet_class_label()
        patch = {
            "source_id": Value("string"),
            "box_index": Value("int32"),
            "label": label,
            **{
                key: Value("int32")
                for key in (*BOX_KEYS, "cell_row", "cell_col", "x_offset", "y_offset", "x", "y", "width", "height")
            },
        }
        columns = {"id": Value("string")}
        if self.config.name == "images":
            columns["image"] = ImageFeature()
        columns.update(
            {
                "labels": List(label),
                "num_labels": Value("int32"),
                "num_patches": Value("int32"),
                "patch_size": Value("int32"),
                "patches": List(patch),
            }
        )
        return Features(columns)

    def protocol(self) -> dict:
        return {
            "multi_label": "labels",
            "label_count_subgroups": [g.k for g in self.grid],
            "variable_topk": True,
            "seed": self.seed,
            "canvas": self.options["canvas"],
            "preprocessing": "resize the whole composite to the model input, no center crop (Anzaku et al. 2024, App. B)",
        }

    # -- prepare -----------------------------------------------------------------------------------------------
    def prepare(self, resolver: SourceResolver) -> Prepared:
        recipe = self._recipe(resolver)
        val = self._val_source(resolver)
        pool = build_pool(val.images, self.options["bad_boxes"], self.options["min_box_side"], val.where)
        sources = val.sources
        data: dict[str, Any] = {"pool": pool, "reader": val.reader, "mode": val.description}
        if recipe is None:
            data["composites"] = {
                g.k: assign_patches(pool.labels, g.k, self.seed, self.options["duplicates"]) for g in self.grid
            }
            data["keys"] = [
                composite_id(self.seed, k, int(j)) for k, (numbers, _) in data["composites"].items() for j in numbers
            ]
            data["label_counts"] = _label_counts_of(pool, data["composites"])
        else:
            folder, recipe_source = recipe
            data.update(_read_recipe(folder, pool, self.options["canvas"]))
            data["recipe"] = folder.path
            data["mode"] = f"the recipe `{folder.path.name}` and {val.description}"
            sources = {**sources, "recipe": recipe_source}
        return Prepared(sources, data)

    def _val_source(self, resolver: SourceResolver) -> ValSource:
        """The val images and boxes, from --input (a built imagenet_val with boxes) or else --manual-dir."""
        if any(_builder_of(path) == "imagenet_val" for path in resolver.inputs) or resolver.manual_dir is None:
            folder, source = resolver.input_dataset("imagenet_val", "boxes", build_hint=VAL_BUILD_HINT)
            return ValSource(
                {"imagenet_val": source},
                FolderImages(folder.path),
                val_from_folder(folder),
                f"the built dataset `{folder.path.name}` (boxes config)",
                str(folder.path),
            )
        val = ImagenetVal("boxes").prepare(resolver)
        layout = val.data["layout"]
        where = f"{resolver.manual_dir} ({layout.name} layout)"
        return ValSource(
            dict(val.sources),
            LayoutImages(layout),
            val_from_layout(layout, val.data["boxes"], where),
            f"the `{layout.name}` layout of the manual ImageNet val files",
            where,
        )

    def _recipe(self, resolver: SourceResolver) -> tuple[DatasetFolder, ResolvedSource] | None:
        """The PatchML recipe given with --input (checked to match this build), or None."""
        if not any(_builder_of(path) == "patchml" for path in resolver.inputs):
            return None
        folder, source = resolver.input_dataset("patchml", "recipe", build_hint="Build one with --config recipe.")
        info = folder.build_info
        built = (info.get("version"), info.get("seed"), info["configs"]["recipe"].get("options"))
        wanted = (self.VERSION, self.seed, self.options)
        if built != wanted:
            raise ConfigError(
                f"recipe {folder.path} was built by patchml {built[0]} with seed {built[1]} and options "
                f"{built[2]}; this build is patchml {wanted[0]} with seed {wanted[1]} and options {wanted[2]}. "
                f"Use materialise() or pass the recipe's {param('seed')} and {param('builder_options')}"
            )
        return folder, source

    # -- plan / generate ---------------------------------------------------------------------------------------
    def split_keys(self, prepared: Prepared) -> dict[str, list[str]]:
        return {SPLIT: list(prepared.data["keys"])}

    def generate(self, prepared: Prepared, shard: Shard) -> Iterator[dict]:
        rows = self.provenance(prepared, shard.keys)
        if self.config.name == "recipe":
            yield from rows
            return
        sources = prepared.data["reader"].read(p["source_id"] for row in rows for p in row["patches"])
        for row in rows:
            data = encode(compose(row, sources, self.options["canvas"]), self.encoding)
            yield {
                "id": row["id"],
                "image": {"bytes": data, "path": f"{row['id']}.{self.extension}"},
                **{key: row[key] for key in PROVENANCE_COLUMNS[1:]},
            }

    @property
    def encoding(self) -> Encoding:
        """How composites are encoded (options ``image_format`` and ``jpeg_quality``)."""
        return encoding_of(self.options["image_format"], self.options["jpeg_quality"])

    @property
    def extension(self) -> str:
        return self.encoding.extension

    def provenance(self, prepared: Prepared, keys: Sequence[str]) -> list[dict]:
        """Provenance rows of ``keys``: placed from the seed, or read from the recipe."""
        import numpy as np

        from imagenet_suite.dataset.folder import DatasetFolder

        if "recipe" in prepared.data:
            table = DatasetFolder(prepared.data["recipe"]).take(list(keys), "recipe", None, list(PROVENANCE_COLUMNS))
            return table.to_pylist()
        grids = {g.k: g for g in self.grid}
        rows = []
        for key in keys:
            _, k, number = parse_composite_id(key)
            numbers, positions = prepared.data["composites"][k]
            row = int(np.searchsorted(numbers, number))
            rows.append(place(prepared.data["pool"], grids[k], self.seed, number, positions[row].tolist()))
        return rows

    # -- reports -----------------------------------------------------------------------------------------------
    def counts(self, prepared: Prepared) -> dict[str, Any]:
        """The count report of this build (``counts.json``): pool, per-k usage, images per label count."""
        pool: Pool = prepared.data["pool"]
        label_counts = prepared.data["label_counts"]  # [(k, number of labels)] per composite
        per_k = collections.Counter(k for k, _ in label_counts)
        by_labels = collections.Counter(n for _, n in label_counts)
        return {
            "seed": self.seed,
            "source": prepared.data["mode"],
            "options": self.options,
            "pool": {**pool.stats, "patches": len(pool)},
            "grid": [
                {
                    "k": g.k,
                    "p": g.p,
                    "composites": per_k[g.k],
                    "patches_used": per_k[g.k] * g.k,
                    "patches_left_over": len(pool) - per_k[g.k] * g.k,
                }
                for g in self.grid
            ],
            "images_by_num_labels": {str(n): by_labels[n] for n in sorted(by_labels)},
            "images": len(label_counts),
        }

    def extra_files(self, prepared: Prepared) -> dict[str, bytes]:
        counts = self.counts(prepared)
        files = {
            "counts.json": (json.dumps(counts, indent=1) + "\n").encode(),
            "table2.csv": table2_csv([counts]).encode(),
        }
        if self.config.name == "images":
            files["examples.png"] = self._examples_picture(prepared)
        return files

    def _examples_picture(self, prepared: Prepared) -> bytes:
        chosen = []
        for g in self.grid:
            chosen += [key for key in prepared.data["keys"] if parse_composite_id(key)[1] == g.k][:EXAMPLES_PER_K]
        rows = self.provenance(prepared, chosen)
        sources = prepared.data["reader"].read(p["source_id"] for row in rows for p in row["patches"])
        examples = [(compose(row, sources, self.options["canvas"]), row["labels"], row["num_patches"]) for row in rows]
        return example_grid(examples, columns=max(1, len(self.grid)))

    def card_context(self, prepared: Prepared) -> dict[str, Any]:
        counts = self.counts(prepared)
        pool = counts["pool"]
        return {
            "source_mode": counts["source"],
            "pool_summary": (
                f"{pool['boxes']:,} boxes read; {pool['patches']:,} patches in the pool "
                f"({pool['clipped']:,} clipped to their image, {pool['skipped_zero_area']:,} zero-area, "
                f"{pool['skipped_outside_image']:,} outside their image and {pool['skipped_too_small']:,} "
                f"below min_box_side={self.options['min_box_side']} dropped)"
            ),
            "grid_table": grid_markdown(counts),
            "count_table": table2_markdown([counts]),
            "encoders": ", ".join(f"{k} {v}" for k, v in encoder_versions().items()),
            "options_summary": ", ".join(f"`{k}={v}`" for k, v in self.options.items()),
        }


def _builder_of(path: Path) -> str | None:
    from imagenet_suite.dataset.folder import DatasetFolder

    try:
        return DatasetFolder(path).name
    except (DatasetFolderError, OSError, KeyError):
        return None


def _label_counts_of(pool: Pool, composites: Mapping[int, tuple[np.ndarray, np.ndarray]]) -> list[tuple[int, int]]:
    """``(k, number of distinct labels)`` of every planned composite, in plan order."""
    import numpy as np

    out = []
    for k, (_, positions) in composites.items():
        labels = np.sort(pool.labels[positions], axis=1)
        distinct = 1 + (np.diff(labels, axis=1) != 0).sum(axis=1) if k > 1 else np.ones(len(labels), dtype=int)
        out += [(k, int(n)) for n in distinct]
    return out


def _read_recipe(folder: DatasetFolder, pool: Pool, canvas: int) -> dict[str, Any]:
    """Keys and label counts of a recipe, after checking each patch against the val source's pool."""
    table = folder.read_table("recipe", None, ["id", "num_patches", "labels", "patches"])
    lookup = pool.lookup()
    keys, label_counts = [], []
    for row in table.to_pylist():
        placed = sorted({patch["label"] for patch in row["patches"]})
        if row["labels"] != placed or row["num_patches"] != len(row["patches"]):
            raise InvalidSourceData(
                f"{folder.path}: recipe row {row['id']} has labels {row['labels']} and num_patches "
                f"{row['num_patches']}, but its {len(row['patches'])} patches have classes {placed}"
            )
        for i, patch in enumerate(row["patches"]):
            where = f"{folder.path}: recipe row {row['id']} patch {i}"
            position = lookup.get((patch["source_id"], patch["box_index"]))
            if position is None:
                raise InvalidSourceData(
                    f"{where} names box {patch['box_index']} of {patch['source_id']}, which is not "
                    "in the val source's patch pool (missing image or box: the recipe does not "
                    "match this val source)"
                )
            expected = (int(pool.labels[position]), *pool.boxes[position].tolist())
            if (patch["label"], *(patch[k] for k in BOX_KEYS)) != expected:
                raise InvalidSourceData(
                    f"{where}: class and box {[patch['label'], *(patch[k] for k in BOX_KEYS)]} differ "
                    f"from the val source's {list(expected)} for that box"
                )
            if not (
                patch["x"] >= 0
                and patch["y"] >= 0
                and patch["x"] + patch["width"] <= canvas
                and patch["y"] + patch["height"] <= canvas
            ):
                raise InvalidSourceData(f"{where}: placement leaves the {canvas}x{canvas} canvas")
        keys.append(row["id"])
        label_counts.append((row["num_patches"], len(row["labels"])))
    return {"keys": keys, "label_counts": label_counts}


# ============================================================================= count report (Table 2 layout)


def table2_rows(counts: Sequence[Mapping[str, Any]]) -> tuple[list[str], list[list[Any]]]:
    """Table 2 of the paper: one row per build (seed), images per number of labels, and the total."""
    sizes = sorted({int(n) for c in counts for n in c["images_by_num_labels"]})
    header = ["dataset", "seed", *[str(n) for n in sizes], "total"]
    rows = [
        [
            f"PatchML seed {c['seed']}",
            c["seed"],
            *[c["images_by_num_labels"].get(str(n), 0) for n in sizes],
            c["images"],
        ]
        for c in counts
    ]
    return header, rows


def table2_csv(counts: Sequence[Mapping[str, Any]]) -> str:
    header, rows = table2_rows(counts)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buffer.getvalue()


def table2_markdown(counts: Sequence[Mapping[str, Any]]) -> str:
    header, rows = table2_rows(counts)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += [
        "| " + " | ".join(f"{v:,}" if isinstance(v, int) and i > 1 else str(v) for i, v in enumerate(row)) + " |"
        for row in rows
    ]
    return "\n".join(lines)


def grid_markdown(counts: Mapping[str, Any]) -> str:
    lines = ["| k | p | composites | patches used | left over |", "|---|---|---|---|---|"]
    lines += [
        f"| {g['k']} | {g['p']} | {g['composites']:,} | {g['patches_used']:,} | {g['patches_left_over']:,} |"
        for g in counts["grid"]
    ]
    return "\n".join(lines)


def table2(folders: Sequence[str | Path]) -> str:
    """Table 2 (CSV) of several builds, e.g. the five seeds; reads each folder's ``counts.json``."""
    from imagenet_suite.dataset.folder import DatasetFolder

    counts = []
    for path in folders:
        folder = DatasetFolder(path)
        if folder.name != PatchML.NAME:
            raise ConfigError(f"{path} holds {folder.name}, not a patchml build")
        config = next(c for c in ("images", "recipe") if c in folder.configs)
        counts.append(json.loads(read_text(folder.file(f"{config}/counts.json"), "PatchML's counts (JSON)")))
    return table2_csv(sorted(counts, key=lambda c: c["seed"]))


# ============================================================================= picture and materialising


def short_name(label: int) -> str:
    """First lemma of a class index, e.g. ``tench``."""
    return classes.lemma(classes.imagenet_wnids()[label]).split(",")[0]


def example_grid(
    examples: Sequence[tuple[Image.Image, Sequence[int], int]], columns: int = 5, panel: int = 200, dpi: int = 100
) -> bytes:
    """PNG bytes of a grid of composites titled with ``k`` and their label names
    (:func:`imagenet_suite.images.grid.titled_grid`, bicubic panels of ``panel`` pixels).

    ``examples``: ``(composite image, label indices, k)``; the label names go three to a line.
    """
    from PIL import Image

    from imagenet_suite.images.grid import Tile, titled_grid

    tiles = []
    for image, labels, k in examples:
        names = [short_name(label) for label in labels]
        lines = tuple(", ".join(names[i : i + 3]) for i in range(0, len(names), 3))
        tiles.append(Tile(image, (f"k={k}, {len(labels)} labels", *lines)))
    return titled_grid(tiles, columns=columns, panel=panel, dpi=dpi, resample=Image.Resampling[RESAMPLE])


def materialise(
    recipe_dir: str | Path,
    out_dir: str | Path,
    *,
    val_dir: str | Path | None = None,
    options: BuildOptions | None = None,
) -> Path:
    """Build the ``images`` config from a recipe folder and the val source (``val_dir``: a built imagenet_val
    with boxes, or ``options.manual_dir``: raw val files). Seed and builder options are the recipe's (those
    of ``options`` are replaced); the recipe and ``val_dir`` come before ``options.inputs``."""
    from imagenet_suite.core.options import BuildOptions
    from imagenet_suite.core.runner import build_dataset
    from imagenet_suite.dataset.folder import DatasetFolder

    options = options if options is not None else BuildOptions()
    folder = DatasetFolder(recipe_dir)
    if folder.name != PatchML.NAME or "recipe" not in folder.configs:
        raise ConfigError(f"{recipe_dir} is not a patchml folder with the recipe config")
    inputs = [Path(recipe_dir)] + ([Path(val_dir)] if val_dir else []) + list(options.inputs)
    recipe = replace(
        options,
        seed=folder.seed,
        builder_options=folder.build_info["configs"]["recipe"]["options"],
        inputs=inputs,
    )
    return build_dataset(PatchML.NAME, out_dir, ["images"], recipe)


def grid_of_folder(path: str | Path, per_k: int = EXAMPLES_PER_K) -> bytes:
    """Picture (PNG bytes) of the first ``per_k`` composites of each k of a built ``images`` config (``per_k``: 1
    to 100, :data:`imagenet_suite.limits.LIMITS`; ConfigError naming it otherwise)."""
    from PIL import Image

    from imagenet_suite.dataset.folder import DatasetFolder
    from imagenet_suite.limits import check_limit

    check_limit("per_k", per_k)

    folder = DatasetFolder(path)
    if folder.name != PatchML.NAME or "images" not in folder.configs:
        raise ConfigError(f"{path} is not a patchml folder with the images config")
    chosen: dict[int, list[str]] = collections.defaultdict(list)
    index = folder.read_table("images", None, ["id", "num_patches"])
    for image_id, k in zip(index.column("id").to_pylist(), index.column("num_patches").to_pylist(), strict=True):
        if len(chosen[k]) < per_k:
            chosen[k].append(image_id)
    ids = [image_id for k in sorted(chosen) for image_id in chosen[k]]
    rows = folder.take(ids, "images", None, ["image", "labels", "num_patches"]).to_pylist()
    examples = [
        (Image.open(io.BytesIO(row["image"]["bytes"])).convert("RGB"), row["labels"], row["num_patches"])
        for row in rows
    ]
    return example_grid(examples, columns=max(1, len(chosen)))
