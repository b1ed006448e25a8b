"""shape_bias_sets: the real texture-vs-shape stimuli, model-vs-human archives, labels, protocol, score CLI."""

from __future__ import annotations

import re
import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from datasets import Image as HFImage

from imagenet_suite.core.options import BuildOptions
from imagenet_suite.core.runner import build_dataset
from imagenet_suite.dataset.folder import DatasetFolder
from imagenet_suite.errors import InvalidSourceData, SourceError
from imagenet_suite.scoring.metrics.shape import CATEGORIES16, CATEGORY_INDICES
from tests.fixtures import model_vs_human as mvh
from tests.helpers import folder_bytes, load, run_cli

STIMULI = "texture-vs-shape/stimuli"
NAME = re.compile(r"^([a-z]+)\d+-([a-z]+)\d+\.png$")  # <shape><i>-<texture><j>.png, parsed independently here


def build(config: str, manual: Path, out: Path, **options) -> Path:
    options.setdefault("progress", False)
    return build_dataset("shape_bias_sets", out, [config], BuildOptions(manual_dir=manual, offline=True, **options))


@pytest.fixture(scope="module")
def tvs(test_data) -> Path:
    return test_data / "texture-vs-shape"


@pytest.fixture(scope="module")
def sample_manual(tmp_path_factory, test_data) -> Path:
    """A texture-vs-shape checkout whose style-transfer folder is the real 48-image sample (copied, not linked:
    the build refuses symlinks in a --manual-dir that lead out of it)."""
    root = tmp_path_factory.mktemp("tvs-sample")
    shutil.copytree(test_data / STIMULI / "cue-conflict-sample", root / "stimuli" / "style-transfer-preprocessed-512")
    return root


@pytest.mark.parametrize("config, folder", [("edge", "edges"), ("silhouette", "filled-silhouettes")])
def test_real_edges_and_silhouettes_build_with_folder_labels_and_original_bytes(config, folder, tvs, tmp_path):
    out = build(config, tvs, tmp_path)
    ds = load(out, config, split="test", cache_dir=tmp_path / "cache")
    files = sorted((tvs / "stimuli" / folder).glob("*/*.png"))
    assert len(ds) == len(files) == 160
    assert ds.features["label16"].names == list(CATEGORIES16)
    rows = {r["id"]: r for r in ds.cast_column("image", HFImage(decode=False))}
    for path in files:
        row = rows[f"{path.parent.name}/{path.name}"]
        assert ds.features["label16"].int2str(row["label16"]) == path.parent.name
        assert row["image"]["bytes"] == path.read_bytes()
    assert Counter(ds["label16"]) == {i: 10 for i in range(16)}


def test_real_cue_conflict_sample_parses_shape_texture_and_the_equal_rule(sample_manual, test_data, tmp_path):
    out = build("cue_conflict", sample_manual, tmp_path, builder_options={"strict_counts": False})
    ds = load(out, "cue_conflict", split="test", cache_dir=tmp_path / "cache")
    files = sorted((test_data / STIMULI / "cue-conflict-sample").glob("*/*.png"))
    assert len(ds) == len(files) == 48
    names = ds.features["shape_label16"].names
    expected_same = 0
    by_id = {r["id"]: r for r in ds.cast_column("image", HFImage(decode=False))}
    for path in files:
        shape, texture = NAME.match(path.name).groups()
        row = by_id[f"{path.parent.name}/{path.name}"]
        assert (names[row["shape_label16"]], names[row["texture_label16"]]) == (path.parent.name, texture)
        assert shape == path.parent.name
        assert row["shape_eq_texture"] == (shape == texture)
        assert row["image"]["bytes"] == path.read_bytes()
        expected_same += shape == texture
    assert 0 < sum(ds["shape_eq_texture"]) == expected_same < 48


def test_the_sample_is_refused_as_the_full_release(sample_manual, tmp_path):
    with pytest.raises(InvalidSourceData, match=r"48 images for cue_conflict; the release has 1280"):
        build("cue_conflict", sample_manual, tmp_path)


def test_release_archive_of_1280_keeps_80_shape_eq_texture_rows_5_per_class(tmp_path):
    mvh.write_release(tmp_path / "manual", "cue-conflict", mvh.cue_conflict_names())
    out = build("cue_conflict", tmp_path / "manual", tmp_path / "out")
    folder = DatasetFolder(out)
    table = folder.read_table(
        "cue_conflict", "test", ["id", "shape_label16", "texture_label16", "shape_eq_texture"]
    ).to_pylist()
    assert len(table) == 1280
    assert sum(r["shape_eq_texture"] for r in table) == 80
    assert Counter(r["shape_label16"] for r in table if r["shape_eq_texture"]) == {i: 5 for i in range(16)}
    for row in table:
        shape, texture = NAME.match(row["id"].split("/")[1]).groups()
        assert (CATEGORIES16[row["shape_label16"]], CATEGORIES16[row["texture_label16"]]) == (shape, texture)
    assert folder.build_info["configs"]["cue_conflict"]["sources"]["cue_conflict_tar"]["file"] == "cue-conflict.tar.gz"


def test_release_archive_breaking_the_80_rule_is_refused(tmp_path):
    names = mvh.cue_conflict_names()
    names[names.index("airplane/airplane6-bear1.png")] = "airplane/airplane6-airplane3.png"  # 81 same, 79 with bear
    mvh.write_release(tmp_path, "cue-conflict", names)
    with pytest.raises(InvalidSourceData, match=r"81 cue-conflict images have shape == texture"):
        build("cue_conflict", tmp_path, tmp_path / "out")


def test_sketch_archive_takes_the_class_from_the_fifth_field(tmp_path):
    mvh.write_release(tmp_path, "sketch", mvh.session_names(2))
    out = build("sketch", tmp_path, tmp_path / "out", builder_options={"strict_counts": False})
    rows = DatasetFolder(out).read_table("sketch", "test", ["id", "label16"]).to_pylist()
    assert len(rows) == 32
    for row in rows:
        assert row["id"].startswith("session-1/")
        assert CATEGORIES16[row["label16"]] == row["id"].split("_")[4]


def test_sketch_count_is_checked_against_the_release(tmp_path):
    mvh.write_release(tmp_path, "sketch", mvh.session_names(2))
    with pytest.raises(InvalidSourceData, match=r"32 images for sketch; the release has 800"):
        build("sketch", tmp_path, tmp_path / "out")


@pytest.mark.parametrize(
    "members, message",
    [
        (
            ["airplan/airplan1-bear1.png"],
            r"cue-conflict/airplan/airplan1-bear1.png: class folder 'airplan' is not one of",
        ),
        (["bear/airplane1-bear2.png"], r"shape prefix 'airplane' differs from its folder 'bear'"),
        (["bear/bear1_bear2.png"], r"is not <shape><i>-<texture><j>.png"),
        (["bear/bear1-tiger2.png"], r"texture 'tiger' is not one of the 16"),
    ],
)
def test_bad_cue_conflict_names_are_named(members, message, tmp_path):
    mvh.write_release(tmp_path, "cue-conflict", members)
    with pytest.raises(InvalidSourceData, match=message):
        build("cue_conflict", tmp_path, tmp_path / "out", builder_options={"strict_counts": False})


def test_non_image_member_and_missing_source_are_named(tmp_path):
    mvh.write_release(tmp_path / "a", "edge", mvh.class_names(1), extra={"edge/bear/notes.txt": b"x"})
    with pytest.raises(InvalidSourceData, match=r"edge.tar.gz: member 'edge/bear/notes.txt' is not an image"):
        build("edge", tmp_path / "a", tmp_path / "out", builder_options={"strict_counts": False})
    (tmp_path / "empty").mkdir()
    with pytest.raises(SourceError, match=r"(?s)edge.tar.gz.*offline.*stimuli/edges/<class>/\*.png"):
        build("edge", tmp_path / "empty", tmp_path / "out")


def test_builds_are_byte_identical_for_any_num_proc(tvs, tmp_path):
    first = build("edge", tvs, tmp_path / "a", shard_size=50)
    second = build("edge", tvs, tmp_path / "b", shard_size=50, num_proc=2)
    assert len([f for f in folder_bytes(first) if f.endswith(".parquet")]) == 4
    assert folder_bytes(first) == folder_bytes(second)


def test_builder_categories_are_the_scoring_categories():
    from imagenet_suite.builders import shape_bias_sets

    assert shape_bias_sets.CATEGORIES16 == CATEGORIES16


def test_protocol_publishes_the_1000_to_16_mapping(tvs, tmp_path):
    protocol = DatasetFolder(build("edge", tvs, tmp_path)).protocol("edge")
    assert protocol["decision_mapping"] == "imagenet_16"
    assert protocol["categories"] == list(CATEGORIES16)
    assert {c: tuple(v) for c, v in protocol["category_indices"].items()} == CATEGORY_INDICES
    assert sum(len(v) for v in protocol["category_indices"].values()) == 207


def _logits_for(decisions: list[str]) -> np.ndarray:
    """1000-way logits whose 16-class mean-probability decision is ``decisions[i]`` (all its classes high)."""
    logits = np.zeros((len(decisions), 1000), np.float32)
    for row, category in enumerate(decisions):
        logits[row, list(CATEGORY_INDICES[category])] = 20.0
    return logits


def test_score_cli_prints_shape_bias_of_a_cue_conflict_build(sample_manual, test_data, tmp_path):
    out = build("cue_conflict", sample_manual, tmp_path, builder_options={"strict_counts": False})
    files = sorted((test_data / STIMULI / "cue-conflict-sample").glob("*/*.png"))
    ids, decisions, shape_hits, texture_hits = [], [], 0, 0
    for k, path in enumerate(files):
        shape, texture = NAME.match(path.name).groups()
        others = [c for c in CATEGORIES16 if c not in (shape, texture)]
        decision = [shape, texture, others[0]][k % 3] if k % 5 else texture
        ids.append(f"{shape}/{path.name}")
        decisions.append(decision)
        if shape != texture:
            shape_hits += decision == shape
            texture_hits += decision == texture
    np.savez(tmp_path / "outputs.npz", ids=np.asarray(ids), logits=_logits_for(decisions))
    result = run_cli("score", str(out), "--outputs", str(tmp_path / "outputs.npz"))
    line = next(line for line in result.stdout.splitlines() if line.split()[:1] == ["shape_bias"])
    assert float(line.split()[2]) == pytest.approx(shape_hits / (shape_hits + texture_hits), abs=1e-6)
