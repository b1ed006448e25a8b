"""backgrounds_challenge (IN-9, Xiao et al. 2021): configs, labels, bytes, the argmax-then-map protocol
published from the real ``in_to_in9.json``, scoring through it, and object focus (Beyond Accuracy, Hesse et al. 2025)."""

from __future__ import annotations

import json
import shutil

import pyarrow.parquet as pq
import pytest
import torch

from imagenet_suite.builders import backgrounds_challenge as bg
from imagenet_suite.cli import main
from imagenet_suite.dataset.folder import DatasetFolder
from imagenet_suite.errors import InvalidSourceData, OutputsError, SourceError
from imagenet_suite.scoring import ModelOutputs, object_focus
from imagenet_suite.scoring.evaluation import report
from imagenet_suite.scoring.metrics import protocols
from tests.fixtures import backgrounds_challenge as bfx
from tests.fixtures import variants as fx
from tests.fixtures.imagenet_layouts import write_checksums
from tests.helpers import REPO_ROOT, load

IN_TO_IN9 = REPO_ROOT / "tests" / "data" / "backgrounds_challenge" / "in_to_in9.json"
# The IN-9 classes in the upstream order (folders 00_dog ... 08_fish; Xiao et al. 2021, Table 1).
IN9_NAMES = [
    "dog",
    "bird",
    "wheeled vehicle",
    "reptile",
    "carnivore",
    "insect",
    "musical instrument",
    "primate",
    "fish",
]
IMAGES = bfx.release_images()


@pytest.fixture(scope="module")
def manual(tmp_path_factory):
    return bfx.write_release(tmp_path_factory.mktemp("bg") / "manual", IMAGES, IN_TO_IN9)


@pytest.fixture(scope="module")
def built(manual, tmp_path_factory):
    return fx.build("backgrounds_challenge", manual, tmp_path_factory.mktemp("bg-out"), bfx.VARIANTS, shard_size=2)


def _rows(folder, config: str) -> list[dict]:
    return pq.read_table(sorted((folder / config).glob("*.parquet"))).to_pylist()


def _upstream_mapping() -> dict[int, int]:
    """``in_to_in9.json`` as read by the upstream in9_eval.py: ``{index: IN-9 class or -1}``."""
    return {int(index): label for index, label in json.loads(IN_TO_IN9.read_text()).items()}


def test_one_config_per_released_variant():
    assert [c.name for c in bg.BackgroundsChallenge.CONFIGS] == list(bfx.VARIANTS)


@pytest.mark.parametrize("variant", bfx.VARIANTS)
def test_every_variant_opens_with_load_dataset_with_labels_and_original_bytes(variant, built, tmp_path):
    from datasets import ClassLabel, Image

    ds = load(built, variant, split="validation", cache_dir=tmp_path)
    expected = sorted((im for im in IMAGES if im.variant == variant), key=lambda im: im.image_id)
    assert ds.num_rows == len(expected) == 5
    assert isinstance(ds.features["label9"], ClassLabel) and ds.features["label9"].names == IN9_NAMES
    assert "label" not in ds.features  # no 1000-way label: the scorer must not treat label9 as one
    raw = ds.cast_column("image", Image(decode=False))
    for row, im in zip(raw, expected, strict=True):
        assert row["id"] == f"{variant}/{im.folder}/{im.file}"
        assert row["file_name"] == row["image"]["path"] == f"bg_challenge/{variant}/val/{im.folder}/{im.file}"
        assert row["image"]["bytes"] == im.data
        assert IN9_NAMES[row["label9"]] == im.folder[3:] and int(im.folder[:2]) == row["label9"]
        assert row["image_mode"] in ("RGB", "L") and row["width"] > 0


def test_rows_are_sorted_and_spaces_in_class_folders_are_kept(built):
    ids = [row["id"] for row in _rows(built, "mixed_rand")]
    assert ids == sorted(ids)
    assert any(i.startswith("mixed_rand/02_wheeled vehicle/") for i in ids)
    assert any(i.startswith("mixed_rand/06_musical instrument/") for i in ids)


def test_protocol_mapping_is_the_inverse_of_the_real_in_to_in9_json(built):
    upstream = _upstream_mapping()
    assert sorted(upstream) == list(range(1000)) and sum(v >= 0 for v in upstream.values()) == 370
    inverse = {name: sorted(i for i, v in upstream.items() if v == label) for label, name in enumerate(IN9_NAMES)}
    for variant in bfx.VARIANTS:
        protocol = DatasetFolder(built).protocol(variant)
        assert protocol["mapping_rule"] == "argmax_then_map"
        assert protocol["label_column"] == "label9" and protocol["num_classes"] == 1000
        assert protocol["class_mapping"] == inverse
        assert list(protocol["class_mapping"]) == IN9_NAMES
        assert ("object_focus" in protocol) == (variant in ("mixed_same", "mixed_rand"))
    assert bg.imagenet_to_in9() == tuple(upstream[i] for i in range(1000))
    assert bg.read_in_to_in9(IN_TO_IN9) == bg.imagenet_to_in9()
    # spot checks by hand: tench (0) is a fish, 151..268 dogs except 171/172, 500 outside IN-9
    assert (upstream[0], upstream[151], upstream[171], upstream[407], upstream[500]) == (8, 0, -1, 2, -1)


def test_the_sources_are_recorded(built):
    sources = json.loads((built / "build_info.json").read_text())["configs"]["mixed_same"]["sources"]
    assert set(sources) == {"archive", "in_to_in9"}
    assert sources["in_to_in9"]["sha256"] == bg.IN_TO_IN9.sha256


def test_an_extracted_copy_gives_the_same_rows(manual, built, tmp_path):
    extracted = fx.extract(manual / bfx.ARCHIVE, tmp_path / "extracted")
    shutil.copy(IN_TO_IN9, extracted / "in_to_in9.json")
    folder = fx.build("backgrounds_challenge", extracted, tmp_path / "out", ["mixed_next"], shard_size=2)
    assert pq.read_table(sorted((folder / "mixed_next").glob("*.parquet"))).equals(
        pq.read_table(sorted((built / "mixed_next").glob("*.parquet")))
    )
    assert "extracted folder" in (folder / "README.md").read_text()


def test_published_counts_are_enforced_by_default(manual, tmp_path):
    with pytest.raises(InvalidSourceData, match=r"bg_challenge/original/val: found 5 images, the release has 4,050"):
        fx.build("backgrounds_challenge", manual, tmp_path / "out", ["original"], strict=True)


def test_a_mapping_that_differs_from_the_published_one_is_refused(manual, tmp_path):
    copy = tmp_path / "manual"
    shutil.copytree(manual, copy)
    mapping = json.loads(IN_TO_IN9.read_text())
    mapping["500"] = 6  # a mirror that adds a class to "musical instrument"
    (copy / "in_to_in9.json").write_text(json.dumps(mapping))
    write_checksums(copy)  # --pins for the edited copy: the content check must catch it
    with pytest.raises(
        InvalidSourceData,
        match=r"in_to_in9.json: ImageNet-1k class 500 maps to 6 \(musical instrument\), expected -1 "
        r"\(no IN-9 class\)",
    ):
        fx.build("backgrounds_challenge", copy, tmp_path / "out", ["original"])


def test_a_missing_release_names_both_accepted_layouts(tmp_path):
    manual = tmp_path / "manual"
    manual.mkdir()
    shutil.copy(IN_TO_IN9, manual / "in_to_in9.json")
    with pytest.raises(SourceError, match=r"(?s)offline.*bg_challenge/mixed_same/val/<NN_class>/\*.JPEG"):
        fx.build("backgrounds_challenge", manual, tmp_path / "out", ["mixed_same"])


# -- scoring: argmax then map ---------------------------------------------------------------------------


def _crafted_logits(ids: list[str]) -> torch.Tensor:
    """Five rows (dog, dog, wheeled vehicle, musical instrument, fish) with hand-set top-1 classes."""
    logits = torch.full((len(ids), 1000), -5.0)
    row = {i.split("/", 1)[1]: n for n, i in enumerate(ids)}
    dogs = sorted(k for k in row if k.startswith("00_dog/"))
    logits[row[dogs[0]], 207] = 9.0  # golden retriever -> dog: right
    logits[row[dogs[1]], 500] = 9.0  # cliff dwelling: in no IN-9 class (-1) -> wrong ...
    logits[row[dogs[1]], 151] = 8.0  # ... although a dog class is second (max over mapped logits would be right)
    wheeled = next(k for k in row if k.startswith("02_wheeled vehicle/"))
    logits[row[wheeled], [33, 407]] = 9.0  # tie: 33 (reptile) beats 407 (ambulance), the lower index -> wrong
    instrument = next(k for k in row if k.startswith("06_musical instrument/"))
    logits[row[instrument], 402] = 9.0  # acoustic guitar -> musical instrument: right
    fish = next(k for k in row if k.startswith("08_fish/"))
    logits[row[fish], [1, 151]] = 9.0  # tie: 1 (goldfish, fish) beats 151 (dog) -> right
    return logits


def test_score_maps_the_argmax_and_counts_unmapped_predictions_wrong(built):
    ids = [row["id"] for row in _rows(built, "mixed_rand")]
    outputs = ModelOutputs(_crafted_logits(ids), ids)
    folder = DatasetFolder(built)
    assert report.applicable_metrics(folder.config_info("mixed_rand")["features"], folder.protocol("mixed_rand")) == [
        "mapped_topk_accuracy"
    ]  # no top-k over a 1000-way label, no LCA
    result = report.score(built, outputs, config="mixed_rand")
    (row,) = result.rows  # top-1 only: top-5 is not defined when the argmax is mapped
    assert (row.metric, row.variant, row.numerator, row.denominator) == ("top1_accuracy", "class_mapping:argmax", 3, 5)
    assert row.value == pytest.approx(0.6)
    assert result.meta["protocol"]["mapping_rule"] == "argmax_then_map"


def test_the_score_command_applies_the_protocol_with_no_flags(built, tmp_path):
    ids = [row["id"] for row in _rows(built, "mixed_same")]
    path = ModelOutputs(_crafted_logits(ids), ids).save(tmp_path / "logits.npz")
    out = tmp_path / "report.json"
    assert main(["score", str(built), "--outputs", str(path), "--config", "mixed_same", "--json", str(out)]) == 0
    metrics = json.loads(out.read_text())["metrics"]
    assert [(m["metric"], m["variant"], m["value"]) for m in metrics] == [
        ("top1_accuracy", "class_mapping:argmax", pytest.approx(0.6))
    ]


def test_argmax_mapped_accuracy_on_a_hand_example():
    mapping = [[0, 1], [3]]  # class 0 <- columns 0, 1; class 1 <- column 3; column 2 in no class
    scores = torch.tensor(
        [
            [0.0, 2.0, 1.0, 0.0],  # top-1 column 1 -> class 0
            [0.0, 0.0, 5.0, 4.0],  # top-1 column 2 -> -1: wrong whatever the label
            [1.0, 0.0, 0.0, 1.0],  # tie of columns 0 and 3 -> column 0 -> class 0
            [0.0, 0.0, 1.0, 1.0],  # tie of columns 2 and 3 -> column 2 -> -1
        ]
    )
    assert protocols.argmax_mapped_predictions(scores, mapping).tolist() == [0, -1, 0, -1]
    counted = protocols.argmax_mapped_accuracy(scores, torch.tensor([0, 1, 0, 1]), mapping)
    assert (counted.numerator, counted.denominator) == (2, 4)
    half = scores.to(torch.bfloat16)
    assert protocols.argmax_mapped_predictions(half, mapping).tolist() == [0, -1, 0, -1]


def test_argmax_then_map_refuses_overlapping_lists_and_labels_outside_the_classes():
    with pytest.raises(OutputsError, match=r"lists column 1 under classes 0 and 1"):
        protocols.argmax_mapped_predictions(torch.zeros(2, 4), [[0, 1], [1]])
    with pytest.raises(OutputsError, match=r"labels must be in 0..1"):
        protocols.argmax_mapped_accuracy(torch.zeros(2, 4), torch.tensor([0, 2]), [[0], [1]])


def test_the_lca_family_keeps_to_max_over_mapped_logits():
    from imagenet_suite.scoring.families import lca

    features = {"label9": {"_type": "ClassLabel", "names": IN9_NAMES}}
    protocol = bg.BackgroundsChallenge("mixed_rand").protocol()
    assert protocols.applies_class_mapping(features, protocol)
    assert not lca.applies(features, protocol)
    assert lca.applies(features, {**protocol, "mapping_rule": "max_over_mapped_logits"})


# -- object focus (Hesse et al. 2025) ------------------------------------------------------------------------


def test_object_focus_is_one_minus_the_bg_gap():
    # Backgrounds Challenge README (torchvision models): mixed_same / mixed_rand accuracies; QUBA Table 12
    # lists ResNet-50 0.93, ResNet-152 0.94, which the paper's formula 1 - (A_mixed_same - A_mixed_rand) gives.
    assert object_focus(0.862, 0.789) == pytest.approx(0.927)
    assert object_focus(0.893, 0.835) == pytest.approx(0.942)
    assert object_focus(0.836, 0.734) == pytest.approx(0.898)  # VGG16-BN
    assert object_focus(0.5, 0.5) == 1.0
    assert object_focus(0.7, 0.8) == pytest.approx(1.1)  # mixed_rand above mixed_same: above 1, not clipped


@pytest.mark.parametrize("bad", [86.2, -0.1, float("nan")])
def test_object_focus_refuses_values_that_are_not_fractions(bad):
    with pytest.raises(ValueError, match=r"mixed_same_accuracy must be a fraction in \[0, 1\]"):
        object_focus(bad, 0.5)
