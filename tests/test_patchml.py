"""PatchML: Algorithm 1 (grid, validity, sampling with the pool reset per k), the builder end to end
(geometry, pixels, determinism, layouts, recipe -> images, options, bad input, counts, CLI, picture)."""

from __future__ import annotations

import io
import json
import shutil

import numpy as np
import pyarrow.parquet as pq
import pytest
from PIL import Image

from imagenet_suite.builders import patchml as pm
from imagenet_suite.core.options import BuildOptions
from imagenet_suite.core.runner import build_dataset
from imagenet_suite.core.sources import read_pins_file
from imagenet_suite.dataset.folder import DatasetFolder
from imagenet_suite.errors import ConfigError, InvalidSourceData, ManualFileMissing
from tests.fixtures import imagenet_layouts as fx
from tests.fixtures.patchml_sources import make_object_images, pool_size, rewrite_solution, wnid
from tests.helpers import UNRENDERED, folder_bytes, load, run_cli

# a quarter-size grid (same rules, same layout) keeps the many small builds fast
SMALL = {"canvas": 128, "grid": "2:64,3:64,4:64,6:42,9:32"}
PAPER_CELLS = {
    2: [(0, 0), (0, 1)],
    3: [(0, 0), (0, 1), (1, 0)],
    4: [(0, 0), (0, 1), (1, 0), (1, 1)],
    6: [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)],
    9: [(0, 0), (0, 1), (0, 2), (0, 3), (1, 0), (1, 1), (1, 2), (1, 3), (2, 0)],
}


@pytest.fixture(scope="module")
def sources():
    return make_object_images(24, seed=5)


@pytest.fixture(scope="module")
def layouts(sources, tmp_path_factory):
    root = tmp_path_factory.mktemp("patchml-layouts")
    kaggle = fx.write_kaggle_layout(root / "kaggle", sources)
    folders = fx.write_folders_layout(root / "folders", sources)
    shutil.copy(kaggle / "LOC_val_solution.csv", folders / "LOC_val_solution.csv")
    return {"kaggle": kaggle, "tar": fx.write_tar_layout(root / "tar", sources), "folders": folders}


@pytest.fixture(scope="module")
def val_folder(layouts, tmp_path_factory):
    return build_dataset(
        "imagenet_val",
        tmp_path_factory.mktemp("val"),
        ["boxes"],
        options=BuildOptions(manual_dir=layouts["kaggle"], progress=False),
    )


@pytest.fixture(scope="module")
def built(val_folder, tmp_path_factory):
    """The paper's grid, seed 0, images + recipe, several shards."""
    return build_dataset(
        "patchml",
        tmp_path_factory.mktemp("patchml"),
        ["images", "recipe"],
        options=BuildOptions(seed=0, inputs=[val_folder], shard_size=16, progress=False),
    )


def rows_of(folder, config="images"):
    return DatasetFolder(folder).read_table(config, None).to_pylist()


def build(out, seed=0, configs=("images",), **options):
    """Build patchml configs with the SMALL builder options (overridden by ``builder_options``)."""
    options.setdefault("progress", False)
    builder_options = {**SMALL, **options.pop("builder_options", {})}
    return build_dataset(
        "patchml", out, list(configs), BuildOptions(seed=seed, builder_options=builder_options, **options)
    )


def decoded(data: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))


# ---------------------------------------------------------------------------------------- Algorithm 1


def test_paper_grid_is_valid_and_row_major():
    grid = pm.parse_grid(pm.DEFAULT_GRID)
    assert [(g.k, g.p, g.columns) for g in grid] == [(2, 256, 2), (3, 256, 2), (4, 256, 2), (6, 170, 3), (9, 128, 4)]
    for g in grid:
        assert [g.cell(i) for i in range(g.k)] == PAPER_CELLS[g.k]


@pytest.mark.parametrize(
    ("k", "p", "canvas", "rule"),
    [
        (5, 256, 512, "k·p² = 327680"),
        (10, 170, 512, "k·p² = 289000"),
        (5, 200, 512, "c² = 4 cells"),
        (1, 513, 512, "more than"),
        (0, 256, 512, "positive"),
        (2, 256, 0, "positive"),
        (7, 192, 512, "c² = 4 cells"),
    ],
)
def test_invalid_configurations_are_refused(k, p, canvas, rule):
    with pytest.raises(ConfigError, match="Configuration invalid") as err:
        pm.check_configuration(k, p, canvas)
    assert rule in str(err.value)


@pytest.mark.parametrize(
    ("grid", "message"),
    [("2:256,2:128", "appears twice"), ("2x256", "is not K:P"), ("2:256,5:256", "Configuration invalid: k=5")],
)
def test_bad_grid_option_fails_before_any_work(grid, message, tmp_path):
    with pytest.raises(ConfigError, match=message):
        build_dataset("patchml", tmp_path, options=BuildOptions(seed=0, builder_options={"grid": grid}, progress=False))
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("options", "seed", "message"),
    [
        ({"jpeg_quality": 0}, 0, "jpeg_quality=0"),
        ({"min_box_side": -2}, 0, "min_box_side=-2"),
        ({"duplicates": "merge"}, 0, "expected one of"),
    ],
)
def test_bad_options(options, seed, message):
    with pytest.raises(ConfigError, match=message):
        pm.PatchML("images", seed=seed, options=options)


@pytest.mark.parametrize(
    ("width", "height", "p", "expected"),
    [
        (100, 50, 256, (256, 128)),
        (50, 100, 256, (128, 256)),
        (10, 7, 256, (256, 179)),  # up-scaled
        (1000, 3, 128, (128, 1)),
        (4, 1, 2, (2, 1)),
        (4, 3, 2, (2, 2)),
        (8, 3, 4, (4, 2)),
        (300, 300, 170, (170, 170)),
    ],
)
def test_fit_size_keeps_aspect_long_side_p_rounds_half_up(width, height, p, expected):
    assert pm.fit_size(width, height, p) == expected


def test_union_gives_floor_n_over_k_per_k_from_a_reset_pool():
    labels = np.random.default_rng(0).integers(0, 20, 103)
    for seed in range(5):
        used_total = 0
        for k in (2, 3, 4, 6, 9):
            numbers, chosen = pm.assign_patches(labels, k, seed)
            assert chosen.shape == (103 // k, k) and numbers.tolist() == list(range(103 // k))
            assert len(np.unique(chosen)) == chosen.size  # without replacement within k
            used_total += chosen.size
        assert used_total > 2 * len(labels)  # only possible because every k starts from the full pool
    first, second = pm.assign_patches(labels, 3, 0)[1], pm.assign_patches(labels, 3, 1)[1]
    assert not np.array_equal(first, second)
    assert np.array_equal(first, pm.assign_patches(labels, 3, 0)[1])


def test_drop_and_resample_policies():
    labels = np.random.default_rng(1).integers(0, 6, 120)
    union_numbers, union = pm.assign_patches(labels, 3, 7, "union")
    numbers, kept = pm.assign_patches(labels, 3, 7, "drop")
    distinct = [len(set(labels[row])) == 3 for row in union]
    assert numbers.tolist() == [j for j, ok in zip(union_numbers.tolist(), distinct, strict=True) if ok]
    assert np.array_equal(kept, union[distinct]) and 0 < len(kept) < len(union)
    numbers, resampled = pm.assign_patches(labels, 3, 7, "resample")
    assert all(len(set(labels[row])) == 3 for row in resampled)
    assert len(np.unique(resampled)) == resampled.size and numbers.tolist() == list(range(len(resampled)))
    assert len(resampled) >= len(kept)
    one_class = np.zeros(10, dtype=int)
    assert pm.assign_patches(one_class, 2, 0, "resample")[1].shape == (0, 2)  # terminates, all left over


# ---------------------------------------------------------------------------------------- the built dataset


def test_schema_rows_and_load_dataset(built, sources, tmp_path):
    ds = load(built, "images", split="test", cache_dir=tmp_path)
    n = pool_size(sources)
    assert ds.num_rows == sum(n // k for k in (2, 3, 4, 6, 9))
    assert ds.features["labels"].feature.names[0] == "n01440764"
    assert ds.features["patches"].feature["label"].num_classes == 1000
    first = ds[0]
    assert first["id"] == "patchml-s0-k2-000000" and first["image"].size == (512, 512) and first["image"].mode == "RGB"
    assert first["num_patches"] == 2 and first["patch_size"] == 256
    order = [pm.parse_composite_id(i)[1:] for i in ds["id"]]
    assert order == sorted(order) and ds["num_patches"] == [k for k, _ in order]
    recipe = load(built, "recipe", split="test", cache_dir=tmp_path)
    assert "image" not in recipe.features and recipe["id"] == ds["id"]


def test_geometry_pixels_and_labels(built, sources):
    by_id = {s.image_id: s for s in sources}
    for row in rows_of(built):
        k, p = row["num_patches"], row["patch_size"]
        pixels = decoded(row["image"]["bytes"])
        assert pixels.shape == (512, 512, 3)
        covered = np.zeros((512, 512), dtype=int)
        assert [(q["cell_row"], q["cell_col"]) for q in row["patches"]] == PAPER_CELLS[k]
        for q in row["patches"]:
            x, y, w, h = q["x"], q["y"], q["width"], q["height"]
            assert q["cell_col"] * p <= x and x + w <= (q["cell_col"] + 1) * p  # inside its cell
            assert q["cell_row"] * p <= y and y + h <= (q["cell_row"] + 1) * p
            assert (x, y) == (q["cell_col"] * p + q["x_offset"], q["cell_row"] * p + q["y_offset"])
            assert max(w, h) == p
            covered[y : y + h, x : x + w] += 1
            source = by_id[q["source_id"]]
            assert q["label"] == source.label
            box = (q["xmin"], q["ymin"], q["xmax"], q["ymax"])
            assert box == sorted(source.boxes)[q["box_index"]]
            expected = Image.open(io.BytesIO(source.data)).convert("RGB").crop(box).resize((w, h), Image.BICUBIC)
            assert np.array_equal(pixels[y : y + h, x : x + w], np.asarray(expected))
        assert covered.max() == 1  # no overlap
        assert not pixels[covered == 0].any()  # black outside the patches
        assert row["labels"] == sorted({q["label"] for q in row["patches"]}) and row["num_labels"] == len(row["labels"])


def test_counts_report_and_table2(built, sources):
    n = pool_size(sources)
    rows = rows_of(built, "recipe")
    counts = json.loads((built / "images" / "counts.json").read_text())
    assert counts["pool"]["patches"] == counts["pool"]["boxes"] == n
    assert [(g["k"], g["composites"], g["patches_left_over"]) for g in counts["grid"]] == [
        (k, n // k, n % k) for k in (2, 3, 4, 6, 9)
    ]
    for k in (2, 3, 4, 6, 9):
        assert sum(1 for r in rows if r["num_patches"] == k) == n // k
        used = [(q["source_id"], q["box_index"]) for r in rows if r["num_patches"] == k for q in r["patches"]]
        assert len(set(used)) == len(used) == (n // k) * k  # sampled without replacement from the full pool
    by_labels = {}
    for r in rows:
        by_labels[str(r["num_labels"])] = by_labels.get(str(r["num_labels"]), 0) + 1
    assert counts["images_by_num_labels"] == dict(sorted(by_labels.items(), key=lambda kv: int(kv[0])))
    assert any(r["num_labels"] < r["num_patches"] for r in rows)  # union: duplicates collapse (few classes)
    header, *body = (built / "images" / "table2.csv").read_text().splitlines()
    assert header.split(",") == ["dataset", "seed", *sorted(by_labels, key=int), "total"]
    assert body == [f"PatchML seed 0,0,{','.join(str(by_labels[c]) for c in sorted(by_labels, key=int))},{len(rows)}"]
    card = (built / "README.md").read_text()
    assert f"{n} patches in the pool" in card and "| PatchML seed 0 | 0 |" in card and not UNRENDERED.search(card)


def test_picture_of_a_build(built, tmp_path):
    data = pm.grid_of_folder(built)
    assert data.startswith(b"\x89PNG") and len(data) < 300_000
    assert Image.open(io.BytesIO(data)).size[0] > 400
    assert Image.open(built / "images" / "examples.png").format == "PNG"


# ---------------------------------------------------------------------------------------- determinism


def test_same_seed_same_bytes_any_num_proc_and_other_seeds_differ(val_folder, tmp_path):
    first = build(tmp_path / "a", seed=4, configs=("images", "recipe"), inputs=[val_folder], shard_size=8)
    parallel = build(
        tmp_path / "b", seed=4, configs=("images", "recipe"), inputs=[val_folder], shard_size=8, num_proc=2
    )
    files = folder_bytes(first)
    assert sum(f.endswith(".parquet") for f in files) >= 6
    assert files == folder_bytes(parallel)
    other = build(tmp_path / "c", seed=5, configs=("recipe",), inputs=[val_folder], shard_size=8)
    a, b = rows_of(first, "recipe"), rows_of(other, "recipe")
    assert len(a) == len(b) and all(x["id"].startswith("patchml-s4-") for x in a)
    assert [x["patches"] for x in a] != [x["patches"] for x in b]


def test_every_val_layout_gives_the_same_rows(layouts, val_folder, tmp_path):
    reference = rows_of(build(tmp_path / "input", inputs=[val_folder]))
    for name, manual in layouts.items():
        pins = read_pins_file(manual / "checksums.tsv") if (manual / "checksums.tsv").exists() else None
        assert rows_of(build(tmp_path / name, manual_dir=manual, pins=pins)) == reference, name


# ---------------------------------------------------------------------------------------- recipe


def test_recipe_materialises_the_images_config_exactly(built, val_folder, tmp_path):
    made = pm.materialise(built, tmp_path / "made", val_dir=val_folder, options=BuildOptions(progress=False))
    for config in ("images",):
        ours = pq.read_table(sorted((made / config).glob("*.parquet"))).replace_schema_metadata(None)
        theirs = pq.read_table(sorted((built / config).glob("*.parquet"))).replace_schema_metadata(None)
        assert ours.equals(theirs)
    assert (made / "images" / "examples.png").read_bytes() == (built / "images" / "examples.png").read_bytes()
    info = json.loads((made / "build_info.json").read_text())
    assert "recipe" in info["configs"]["images"]["sources"]


def test_recipe_must_match_seed_and_val_source(built, sources, tmp_path):
    with pytest.raises(ConfigError, match="built by patchml 1.0.0 with seed 0"):
        build_dataset(
            "patchml",
            tmp_path / "x",
            ["images"],
            options=BuildOptions(seed=1, inputs=[built], manual_dir=None, progress=False),
        )
    fewer = fx.write_kaggle_layout(tmp_path / "fewer", sources[:20])  # images 21..24 missing
    with pytest.raises(
        InvalidSourceData, match="recipe row .* names box .* of ILSVRC2012_val_0000002[1-4].*not in the val"
    ):
        pm.materialise(built, tmp_path / "y", options=BuildOptions(manual_dir=fewer, progress=False))


# ---------------------------------------------------------------------------------------- options


def test_drop_resample_and_min_box_side(val_folder, sources, tmp_path):
    union = {r["id"]: r for r in rows_of(build(tmp_path / "u", inputs=[val_folder], configs=("recipe",)), "recipe")}
    dropped = rows_of(
        build(tmp_path / "d", inputs=[val_folder], configs=("recipe",), builder_options={"duplicates": "drop"}),
        "recipe",
    )
    assert dropped and all(r["num_labels"] == r["num_patches"] for r in dropped)
    assert all(union[r["id"]] == r for r in dropped)  # the same composites, minus those with repeated classes
    assert len(dropped) == sum(1 for r in union.values() if r["num_labels"] == r["num_patches"])
    resampled = rows_of(
        build(tmp_path / "r", inputs=[val_folder], configs=("recipe",), builder_options={"duplicates": "resample"}),
        "recipe",
    )
    assert all(r["num_labels"] == r["num_patches"] for r in resampled) and len(resampled) >= len(dropped)
    small = sum(1 for s in sources for b in s.boxes if min(b[2] - b[0], b[3] - b[1]) < 20)
    assert small
    folder = build(tmp_path / "m", inputs=[val_folder], configs=("recipe",), builder_options={"min_box_side": 20})
    counts = json.loads((folder / "recipe" / "counts.json").read_text())
    assert counts["pool"]["skipped_too_small"] == small and counts["pool"]["patches"] == pool_size(sources) - small
    assert all(
        min(q["xmax"] - q["xmin"], q["ymax"] - q["ymin"]) >= 20 for r in rows_of(folder, "recipe") for q in r["patches"]
    )


def test_jpeg_format(val_folder, tmp_path):
    rows = rows_of(build(tmp_path, inputs=[val_folder], builder_options={"image_format": "jpeg", "jpeg_quality": 90}))
    image = Image.open(io.BytesIO(rows[0]["image"]["bytes"]))
    assert image.format == "JPEG" and image.size == (128, 128) and rows[0]["image"]["path"].endswith(".jpg")


# ---------------------------------------------------------------------------------------- bad input


@pytest.fixture()
def bad_boxes_layout(sources, tmp_path):
    root = fx.write_kaggle_layout(tmp_path / "bad", sources)
    third, fourth = sources[2], sources[3]
    width = Image.open(io.BytesIO(third.data)).width
    rewrite_solution(
        root,
        {
            third.image_id: [(third.wnid, 2, 2, width + 7, 20)],  # reaches outside the image
            fourth.image_id: [(fourth.wnid, 5, 5, 5, 30), (fourth.wnid, 1, 1, 12, 12)],
        },
    )  # zero-area + valid
    boxes = pool_size(sources) - len(third.boxes) - len(fourth.boxes) + 3
    return root, boxes, third, width


def test_bad_boxes_error_names_the_box(bad_boxes_layout, tmp_path):
    root, _, third, width = bad_boxes_layout
    with pytest.raises(InvalidSourceData, match=f"image {third.image_id} box 0 .*reaches outside the {width}x"):
        build(tmp_path, manual_dir=root, builder_options={"bad_boxes": "error"})


def test_bad_boxes_skip_and_clip_are_counted(bad_boxes_layout, tmp_path):
    root, boxes, third, width = bad_boxes_layout
    skip = build(tmp_path / "s", manual_dir=root, configs=("recipe",), builder_options={"bad_boxes": "skip"})
    pool = json.loads((skip / "recipe" / "counts.json").read_text())["pool"]
    assert (pool["boxes"], pool["patches"], pool["skipped_outside_image"], pool["skipped_zero_area"]) == (
        boxes,
        boxes - 2,
        1,
        1,
    )
    assert third.image_id not in {q["source_id"] for r in rows_of(skip, "recipe") for q in r["patches"]}
    clip = build(tmp_path / "c", manual_dir=root, builder_options={"bad_boxes": "clip"}, seed=2)
    pool = json.loads((clip / "images" / "counts.json").read_text())["pool"]
    assert (pool["patches"], pool["clipped"], pool["skipped_zero_area"]) == (boxes - 1, 1, 1)
    clipped = [q for r in rows_of(clip) for q in r["patches"] if q["source_id"] == third.image_id]
    assert clipped and all((q["xmin"], q["ymin"], q["xmax"], q["ymax"]) == (2, 2, width, 20) for q in clipped)


def test_box_of_a_missing_image_is_named(sources, tmp_path):
    root = fx.write_kaggle_layout(tmp_path / "m", sources)
    rewrite_solution(root, {"ILSVRC2012_val_00000099": [(wnid(1), 1, 1, 9, 9)]})
    with pytest.raises(InvalidSourceData, match="1 labelled image.*not in .*ILSVRC2012_val_00000099"):
        build(tmp_path / "out", manual_dir=root)


def test_without_a_val_source_the_error_says_how_to_get_one(tmp_path):
    with pytest.raises(
        ManualFileMissing,
        match="imagenet_val .*config 'boxes'.*pass its folder as inputs.*imagenet-suite build imagenet_val",
    ):
        build(tmp_path)


# ---------------------------------------------------------------------------------------- CLI


def test_cli_builds_a_seed(val_folder, tmp_path):
    result = run_cli(
        "build",
        "patchml",
        "--seed",
        "3",
        "--out",
        str(tmp_path),
        "--input",
        str(val_folder),
        "--option",
        "canvas=128",
        "--option",
        f"grid={SMALL['grid']}",
        "--no-progress",
        "--config",
        "recipe",
    )
    folder = result.stdout.strip().splitlines()[-1]
    assert "patchml-1.0.0-seed3-" in folder and DatasetFolder(folder).seed == 3
    assert all(
        i.startswith("patchml-s3-") for i in DatasetFolder(folder).read_table("recipe", None, ["id"])["id"].to_pylist()
    )


def test_table2_of_several_seeds(val_folder, tmp_path):
    folders = [build(tmp_path / str(seed), seed=seed, inputs=[val_folder], configs=("recipe",)) for seed in (2, 1)]
    lines = pm.table2(folders).splitlines()
    assert lines[0].startswith("dataset,seed,") and [line.split(",")[1] for line in lines[1:]] == ["1", "2"]
    with pytest.raises(ConfigError, match="not a patchml build"):
        pm.table2([val_folder])


# ---------------------------------------------------------------------------------------- scoring a build


def test_scoring_a_build_uses_its_protocol(built):
    import torch

    from imagenet_suite.scoring.evaluation.report import score
    from imagenet_suite.scoring.metrics import multilabel  # noqa: F401  (registers the multi-label metrics)
    from imagenet_suite.scoring.outputs import ModelOutputs

    rows = rows_of(built, "recipe")
    logits = torch.zeros(len(rows), 1000)
    predicted = []
    for i, row in enumerate(rows):
        if i % 2 == 0:
            logits[i, row["labels"]] = 1.0
            predicted.append(set(row["labels"]))
        else:
            predicted.append(set(range(row["num_labels"])))  # all-zero logits: the lowest indices
    report = score(built, ModelOutputs(logits, [r["id"] for r in rows]), config="recipe")
    assert report.meta["protocol"]["label_count_subgroups"] == [2, 3, 4, 6, 9] and report.meta["protocol"]["seed"] == 0
    groups = {}
    for row, prediction in zip(rows, predicted, strict=True):
        if row["num_labels"] in (2, 3, 4, 6, 9):
            groups.setdefault(row["num_labels"], []).append(prediction == set(row["labels"]))
    expected = np.mean([np.mean(hits) for hits in groups.values()])
    assert report.value("asma", "exact") == pytest.approx(expected, abs=1e-12)
    assert report.value("asma_coverage") == pytest.approx(sum(map(len, groups.values())) / len(rows))


def test_fig_8_draws_the_composites_with_most_labels_and_the_models_top_classes(built, tmp_path):
    """Anzaku et al. 2024, Fig. 8 (``patchml predictions``): the first composites with N labels (the paper's 9;
    here the most the fixture's few classes give), each with the outputs' N most probable classes, those outside
    the ground truth marked (red in the picture)."""
    import torch

    from imagenet_suite.errors import OutputsError
    from imagenet_suite.scoring.outputs import ModelOutputs
    from imagenet_suite.scoring.presentation.figures.anzaku2024_examples import prediction_examples

    rows = rows_of(built)
    most = max(len(row["labels"]) for row in rows)
    shown = [row for row in rows if len(row["labels"]) == most][:2]
    assert most >= 4 and len(shown) == 2
    logits = torch.randn(len(rows), 1000, generator=torch.Generator().manual_seed(0))
    first = rows.index(shown[0])
    logits[first, list(shown[0]["labels"][:2])] += 20  # two of its labels on top, then random classes
    outputs = ModelOutputs(logits, [row["id"] for row in rows])
    outputs.save(tmp_path / "patchml.pt")
    found = prediction_examples(built, tmp_path / "patchml.pt", labels=most, examples=2)
    assert [e.image_id for e in found] == [row["id"] for row in shown] and all(len(e.top) == most for e in found)
    best = torch.topk(torch.softmax(logits[first], 0), most)
    assert [c for c, _ in found[0].top] == best.indices.tolist()
    assert [p for _, p in found[0].top] == pytest.approx(best.values.tolist())
    assert found[0].wrong == tuple(c for c in best.indices.tolist() if c not in shown[0]["labels"])
    assert {c for c, _ in found[0].top[:2]} == set(shown[0]["labels"][:2]) and found[0].wrong
    out = tmp_path / "fig8.png"
    result = run_cli("patchml", "predictions", str(built), "--outputs", str(tmp_path / "patchml.pt"),
                     "--out", str(out), "--labels", str(most), "--examples", "2")  # fmt: skip
    assert result.stdout.strip() == str(out) and Image.open(out).size[1] > 400  # two rows drawn
    ModelOutputs(logits[:3], [row["id"] for row in rows[:3]]).save(tmp_path / "few.pt")
    with pytest.raises(OutputsError, match=r"few.pt: no row for"):
        prediction_examples(built, tmp_path / "few.pt", labels=most, examples=2)
    with pytest.raises(ConfigError, match=f"has no composite with {most + 1} labels"):
        prediction_examples(built, tmp_path / "patchml.pt", labels=most + 1)
