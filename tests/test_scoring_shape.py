"""The 16-class decision mapping, shape bias on the real cue-conflict images, 16-class accuracy."""

from __future__ import annotations

import pytest
import torch

from imagenet_suite.errors import OutputsError
from imagenet_suite.scoring.evaluation.report import score
from imagenet_suite.scoring.metrics.shape import (
    CATEGORIES16,
    CATEGORY_INDICES,
    category_probabilities,
    cue_conflict_labels,
    decisions16,
    mapped_columns,
    shape_bias,
)
from imagenet_suite.scoring.outputs import ModelOutputs
from tests.test_scoring_join import write_dataset_folder

# Beyond Accuracy's 16-class decision mapping ("The ImageNet indices per category", verbatim from
# model-vs-human's human_categories.py): transcribed here by hand, on purpose not
# imported from imagenet_suite, so the package's table is checked against an independent copy.
SPEC_CATEGORY_INDICES: dict[str, tuple[int, ...]] = {
    "airplane": (404,),
    "bear": (294, 295, 296, 297),
    "bicycle": (444, 671),
    "bird": (
        8,
        10,
        11,
        12,
        13,
        14,
        15,
        16,
        18,
        19,
        20,
        22,
        23,
        24,
        80,
        81,
        82,
        83,
        87,
        88,
        89,
        90,
        91,
        92,
        93,
        94,
        95,
        96,
        98,
        99,
        100,
        127,
        128,
        129,
        130,
        131,
        132,
        133,
        135,
        136,
        137,
        138,
        139,
        140,
        141,
        142,
        143,
        144,
        145,
    ),
    "boat": (472, 554, 625, 814, 914),
    "bottle": (440, 720, 737, 898, 899, 901, 907),
    "car": (436, 511, 817),
    "cat": (281, 282, 283, 284, 285, 286),
    "chair": (423, 559, 765, 857),
    "clock": (409, 530, 892),
    "dog": (
        152,
        153,
        154,
        155,
        156,
        157,
        158,
        159,
        160,
        161,
        162,
        163,
        164,
        165,
        166,
        167,
        168,
        169,
        170,
        171,
        172,
        173,
        174,
        175,
        176,
        177,
        178,
        179,
        180,
        181,
        182,
        183,
        184,
        185,
        186,
        187,
        188,
        189,
        190,
        191,
        193,
        194,
        195,
        196,
        197,
        198,
        199,
        200,
        201,
        202,
        203,
        205,
        206,
        207,
        208,
        209,
        210,
        211,
        212,
        213,
        214,
        215,
        216,
        217,
        218,
        219,
        220,
        221,
        222,
        223,
        224,
        225,
        226,
        228,
        229,
        230,
        231,
        232,
        233,
        234,
        235,
        236,
        237,
        238,
        239,
        240,
        241,
        243,
        244,
        245,
        246,
        247,
        248,
        249,
        250,
        252,
        253,
        254,
        255,
        256,
        257,
        259,
        261,
        262,
        263,
        265,
        266,
        267,
        268,
    ),
    "elephant": (385, 386),
    "keyboard": (508, 878),
    "knife": (499,),
    "oven": (766,),
    "truck": (555, 569, 656, 675, 717, 734, 864, 867),
}


def test_mapping_is_the_specs_207_indices():
    spec = SPEC_CATEGORY_INDICES
    assert [len(spec[name]) for name in ("bird", "dog")] == [49, 109]  # the counts the spec prints beside them
    assert set(spec) == set(CATEGORIES16) and list(CATEGORIES16) == sorted(CATEGORIES16)
    assert {name: CATEGORY_INDICES[name] for name in spec} == spec
    columns, owner, sizes = mapped_columns()
    assert len(columns) == 207 and len(set(columns.tolist())) == 207  # disjoint categories
    assert sizes.tolist() == [len(spec[name]) for name in CATEGORIES16]
    assert owner.tolist() == [i for i, name in enumerate(CATEGORIES16) for _ in spec[name]]


def one_hot_logits(indices: list[int], scale: float = 30.0) -> torch.Tensor:
    logits = torch.zeros(len(indices), 1000)
    logits[torch.arange(len(indices)), torch.tensor(indices)] = scale
    return logits


def test_a_confident_class_maps_to_its_category():
    logits = one_hot_logits([404, 499, 766, 281, 385, 207])  # airplane, knife, oven, cat, elephant, dog
    names = [CATEGORIES16[i] for i in decisions16(logits).tolist()]
    assert names == ["airplane", "knife", "oven", "cat", "elephant", "dog"]


def test_categories_aggregate_by_mean_not_sum():
    probs = torch.zeros(1, 1000)
    probs[0, list(CATEGORY_INDICES["dog"])] = 0.005  # sum 0.545 but mean 0.005
    probs[0, 404] = 0.01  # airplane: mean 0.01
    probs[0, 0] = 1 - probs.sum()  # tench, outside the 207
    assert CATEGORIES16[decisions16(probs, "probs").item()] == "airplane"
    assert category_probabilities(probs, "probs")[0, CATEGORIES16.index("dog")].item() == pytest.approx(0.005)


def test_ties_go_to_the_lowest_category():
    probs = torch.full((1, 1000), 0.0)
    probs[0, [404, 499]] = 0.5  # airplane and knife tie
    assert decisions16(probs, "probs").item() == CATEGORIES16.index("airplane")


def test_mapping_refuses_non_imagenet_scores():
    with pytest.raises(OutputsError, match="1000-way"):
        decisions16(torch.zeros(2, 200))


def test_unknown_category_names_are_refused():
    from imagenet_suite.scoring.metrics.shape import category_index

    assert category_index(["truck", "airplane"]).tolist() == [15, 0]
    with pytest.raises(OutputsError, match=r"unknown 16-class categories \['lorry'\]"):
        category_index(["truck", "lorry"])


def test_cue_conflict_file_names():
    assert cue_conflict_labels("airplane/airplane1-bicycle2.png") == ("airplane", "bicycle")
    assert cue_conflict_labels("cue-conflict/bear/bear1-bear3.png") == ("bear", "bear")
    with pytest.raises(OutputsError, match="not a cue-conflict path"):
        cue_conflict_labels("airplane1.png")


def class_label(names) -> dict:
    return {"names": list(names), "_type": "ClassLabel"}


def decision_logits(choices: list[str]) -> torch.Tensor:
    """Logits whose 16-class decision is ``choices[i]`` (one confident ImageNet class per row)."""
    return one_hot_logits([CATEGORY_INDICES[name][0] for name in choices], scale=25.0)


@pytest.fixture(scope="module")
def cue_conflict(test_data):
    files = sorted((test_data / "texture-vs-shape/stimuli/cue-conflict-sample").glob("*/*.png"))
    assert len(files) == 48
    return [(f"{path.parent.name}/{path.name}", path.read_bytes()) for path in files]


def test_shape_bias_on_real_cue_conflict_images(tmp_path, cue_conflict):
    names = [name for name, _ in cue_conflict]
    shapes, textures = zip(*(cue_conflict_labels(name) for name in names), strict=True)
    # decision rule: every 3rd image follows its shape, the next its texture, the next neither
    choices, expected_shape, expected_texture = [], 0, 0
    for i, (shape_name, texture_name) in enumerate(zip(shapes, textures, strict=True)):
        other = next(c for c in CATEGORIES16 if c not in (shape_name, texture_name))
        choices.append([shape_name, texture_name, other][i % 3])
        if shape_name != texture_name:
            expected_shape += i % 3 == 0
            expected_texture += i % 3 == 1
    excluded = sum(s == t for s, t in zip(shapes, textures, strict=True))
    assert 0 < excluded < len(names)  # the sample holds shape == texture images, which must be dropped

    ids = [f"cue-conflict/{name}" for name in names]
    folder = write_dataset_folder(
        tmp_path,
        {
            "id": ids,
            "file_name": names,
            "image": [{"bytes": data, "path": name} for name, data in cue_conflict],
            "shape_label16": [CATEGORIES16.index(s) for s in shapes],
            "texture_label16": [CATEGORIES16.index(t) for t in textures],
        },
        {
            "id": {"dtype": "string", "_type": "Value"},
            "file_name": {"dtype": "string", "_type": "Value"},
            "image": {"_type": "Image"},
            "shape_label16": class_label(CATEGORIES16),
            "texture_label16": class_label(CATEGORIES16),
        },
        protocol={"decision_mapping": "imagenet_16"},
        builder="cue_conflict",
    )
    report = score(folder, ModelOutputs(decision_logits(choices), ids), metrics=["shape_bias"])
    assert report.value("shape_bias", "pooled") == expected_shape / (expected_shape + expected_texture)
    table = report.table.set_index("subgroup")
    assert table.loc["", "numerator"] == expected_shape
    assert table.loc["", "denominator"] == expected_shape + expected_texture
    airplane = [i for i, s in enumerate(shapes) if s == "airplane" and textures[i] != "airplane"]
    airplane_shape = sum(i % 3 == 0 for i in airplane)
    airplane_texture = sum(i % 3 == 1 for i in airplane)
    assert table.loc["airplane", "value"] == airplane_shape / (airplane_shape + airplane_texture)


def test_shape_bias_ignores_decisions_matching_neither_cue():
    shapes, textures = torch.tensor([0, 1, 2, 3, 4]), torch.tensor([5, 1, 6, 7, 8])
    result = shape_bias(torch.tensor([0, 9, 6, 9, 9]), shapes, textures)
    assert (result.shape_hits, result.texture_hits, result.conflict_images, result.excluded_images) == (1, 1, 4, 1)
    assert result.value == 0.5


@pytest.mark.parametrize("folder_name", ["edges", "filled-silhouettes"])
def test_accuracy16_on_real_edge_and_silhouette_sets(tmp_path, test_data, folder_name):
    files = sorted((test_data / "texture-vs-shape/stimuli" / folder_name).glob("*/*.png"))
    assert len(files) == 160
    categories = [path.parent.name for path in files]
    choices = [c if i % 4 else CATEGORIES16[(CATEGORIES16.index(c) + 1) % 16] for i, c in enumerate(categories)]
    ids = [f"{folder_name}/{path.parent.name}/{path.name}" for path in files]
    folder = write_dataset_folder(
        tmp_path,
        {"id": ids, "label16": categories},
        {"id": {"dtype": "string", "_type": "Value"}, "label16": {"dtype": "string", "_type": "Value"}},
        protocol={"decision_mapping": "imagenet_16"},
    )
    report = score(folder, ModelOutputs(decision_logits(choices), ids))
    assert report.value("accuracy16") == 120 / 160
