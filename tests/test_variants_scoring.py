"""Protocols as data, applied by the scorer: A/R class subsets and ObjectNet's max-over-mapped rule vs hand computations."""

from __future__ import annotations

import io

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch
from PIL import Image

from imagenet_suite import classes
from imagenet_suite.dataset.folder import DatasetFolder
from imagenet_suite.errors import OutputsError
from imagenet_suite.scoring import ModelOutputs
from imagenet_suite.scoring.evaluation import report
from imagenet_suite.scoring.metrics import protocols
from tests.fixtures import variants as fx


def _hand_topk(scores: np.ndarray, labels: list[int], k: int, columns: list[list[int]]) -> float:
    """Plain-Python top-k over classes whose score is the max over their columns; ties to the lowest index."""
    hits = 0
    for row, label in zip(scores, labels, strict=True):
        class_scores = [max(float(row[c]) for c in cols) for cols in columns]
        better = sum(
            1 for j, s in enumerate(class_scores) if s > class_scores[label] or (s == class_scores[label] and j < label)
        )
        hits += better < k
    return hits / len(labels)


# -- pure functions ---------------------------------------------------------------------------------------------


def test_mapped_scores_is_the_max_over_each_mapped_column_set():
    scores = torch.randn(7, 20, generator=torch.Generator().manual_seed(0))
    mapping = [[3], [5, 1], [0, 19, 7]]
    got = protocols.mapped_scores(scores, mapping)
    expected = torch.tensor([[max(float(row[c]) for c in cols) for cols in mapping] for row in scores])
    assert got.shape == (7, 3) and got.dtype == torch.float32 and torch.equal(got, expected)
    half = scores.to(torch.bfloat16)
    assert torch.equal(protocols.mapped_scores(half, mapping), protocols.mapped_scores(half.float(), mapping))


def test_mapped_topk_matches_hand_computation_with_ties_and_any_output_kind():
    generator = torch.Generator().manual_seed(1)
    logits = torch.randint(0, 4, (40, 12), generator=generator).float()  # many ties
    mapping = [[0, 5], [1], [2, 3, 4], [11, 6]]
    labels = torch.randint(0, 4, (40,), generator=generator)
    for k in (1, 2):
        counted = protocols.mapped_topk_accuracy(logits, labels, mapping, ks=(k,))[k]
        assert counted.denominator == 40
        assert counted.value == pytest.approx(_hand_topk(logits.numpy(), labels.tolist(), k, mapping))
    as_logits = protocols.mapped_topk_accuracy(logits, labels, mapping, ks=(1, 2))
    for transformed in (torch.softmax(logits, 1), torch.log_softmax(logits, 1)):  # softmax is increasing in a row
        assert protocols.mapped_topk_accuracy(transformed, labels, mapping, ks=(1, 2)) == as_logits


def test_mapping_in_label_order_and_its_errors():
    protocol = {"class_mapping": {"b": [2], "a": [0, 1]}}
    assert protocols.mapping_in_label_order(protocol, ["a", "b"], 3) == [[0, 1], [2]]
    with pytest.raises(OutputsError, match=r"unknown \['b'\], unmapped \['c'\]"):
        protocols.mapping_in_label_order(protocol, ["a", "c"], 3)
    with pytest.raises(OutputsError, match=r"class_mapping\['b'\] = \[2\]: expected .* in 0..1"):
        protocols.mapping_in_label_order(protocol, ["a", "b"], 2)
    with pytest.raises(OutputsError, match="columns outside 0..2"):
        protocols.mapped_scores(torch.zeros(2, 3), [[3]])


def test_border_crop_removes_the_border_and_is_described():
    data = fx.objectnet_images()[0].data
    with Image.open(io.BytesIO(data)) as image:
        cropped = protocols.border_crop(image, 2)
        assert cropped.size == (image.width - 4, image.height - 4)
        assert np.array_equal(np.asarray(cropped), np.asarray(image)[2:-2, 2:-2])
        assert not np.all(np.asarray(cropped)[0] == (255, 0, 0))  # the red 1 px frame is gone
    assert protocols.crop_box(100, 60, 2) == (2, 2, 98, 58)
    with pytest.raises(ValueError, match="does not fit"):
        protocols.crop_box(4, 4, 2)
    from imagenet_suite.builders.objectnet import Objectnet

    assert "2 px border crop" in protocols.crop_description(Objectnet("imagenet_overlap").protocol())
    assert protocols.crop_description({"class_subset": [1]}) is None


# -- through the scorer, on built fixtures --------------------------------------------------------------------


@pytest.mark.parametrize(
    "name,root,images",
    [("imagenet_a", "imagenet-a", fx.imagenet_a_images), ("imagenet_r", "imagenet-r", fx.imagenet_r_images)],
)
def test_subset_scoring_equals_a_hand_computation_over_the_200_classes(name, root, images, tmp_path):
    folder = fx.build(name, fx.write_hendrycks_tar(tmp_path / "m", root, images()), tmp_path / "out")
    table = pq.read_table(sorted((folder / "default").glob("*.parquet")), columns=["id", "label"])
    ids, labels = table.column("id").to_pylist(), table.column("label").to_pylist()
    subset = list(classes.subset_indices(name))
    outside = next(i for i in range(1000) if i not in subset)
    logits = torch.randn(len(ids), 1000, generator=torch.Generator().manual_seed(3))
    logits[:, labels[0]] -= 10
    logits[0, labels[0]] = 5.0  # row 0: the label wins within the 200 ...
    logits[0, outside] = 9.0  # ... but a class outside the subset wins over the 1000
    outputs = ModelOutputs(logits, ids)
    result = report.score(folder, outputs, metrics=["topk_accuracy"])
    columns = [[c] for c in subset]
    positions = [subset.index(label) for label in labels]
    for k in (1, 5):
        expected = _hand_topk(logits.numpy(), positions, k, columns)
        assert result.value(f"top{k}_accuracy", "class_subset") == pytest.approx(expected)
    assert result.meta["protocol"]["class_subset_name"] == name
    full = _hand_topk(logits.numpy(), labels, 1, [[c] for c in range(1000)])
    assert full != result.value("top1_accuracy", "class_subset")  # slicing to the subset changes the answer


def test_objectnet_max_over_mapped_classes_equals_a_hand_computation(tmp_path):
    from imagenet_suite.builders.objectnet import OBJECTNET_CLASSES, OVERLAP

    folder = fx.build("objectnet", fx.write_objectnet(tmp_path / "m", fx.objectnet_images()), tmp_path / "out")
    table = pq.read_table(sorted((folder / "imagenet_overlap").glob("*.parquet")), columns=["id", "objectnet_label"])
    ids, labels = table.column("id").to_pylist(), table.column("objectnet_label").to_pylist()
    logits = torch.randn(len(ids), 1000, generator=torch.Generator().manual_seed(4))
    chair = ids.index(next(i for i in ids if i.startswith("chair/")))
    logits[chair, 559] = 20.0  # folding chair: the *second* mapped class of "chair" holds the max
    outputs = ModelOutputs(logits, ids)
    dataset = DatasetFolder(folder)
    assert "mapped_topk_accuracy" in report.applicable_metrics(dataset.config_info()["features"], dataset.protocol())
    applicable = report.applicable_metrics(dataset.config_info()["features"], dataset.protocol())
    assert applicable == ["lca", "mapped_topk_accuracy"]
    result = report.score(folder, outputs, metrics=["mapped_topk_accuracy"])
    columns = [list(OVERLAP[name]) for name in OBJECTNET_CLASSES]
    for k in (1, 5):
        assert result.value(f"top{k}_accuracy", protocols.MAPPED_VARIANT) == pytest.approx(
            _hand_topk(logits.numpy(), labels, k, columns)
        )
    first_only = _hand_topk(logits[[chair]].numpy(), [labels[chair]], 1, [cols[:1] for cols in columns])
    max_rule = _hand_topk(logits[[chair]].numpy(), [labels[chair]], 1, columns)
    assert (first_only, max_rule) == (0.0, 1.0)  # the rule matters for multi-mapped classes
    assert protocols.crop_description(result.meta["protocol"]).startswith("inputs assume a 2 px border crop")


def test_objectnet_lca_represents_label_and_prediction_by_their_first_mapped_class(tmp_path):
    """The LCA-on-the-Line code: predict among the 113 classes (max over mapped logits), then measure the
    mistake between the first ImageNet class of the label and of the prediction, in the full tree."""
    from imagenet_suite.builders.objectnet import OBJECTNET_CLASSES, OVERLAP
    from imagenet_suite.hierarchies.imagenet1k import imagenet1k_distance_matrix

    folder = fx.build("objectnet", fx.write_objectnet(tmp_path / "m", fx.objectnet_images()), tmp_path / "out")
    table = pq.read_table(sorted((folder / "imagenet_overlap").glob("*.parquet")), columns=["id", "objectnet_label"])
    ids, labels = table.column("id").to_pylist(), table.column("objectnet_label").to_pylist()
    logits = torch.randn(len(ids), 1000, generator=torch.Generator().manual_seed(5))
    chair = next(row for row, i in enumerate(ids) if i.startswith("chair/"))
    logits[chair, 559] = 30.0  # a *second* mapped class wins: the prediction is "chair", correct
    wrong = next(row for row in range(len(ids)) if row != chair)
    logits[wrong, 765] = 40.0  # rocking chair, the third class of "chair": a mistake, measured from 423
    columns = [list(OVERLAP[name]) for name in OBJECTNET_CLASSES]
    result = report.score(folder, ModelOutputs(logits, ids), metrics=["lca"])

    info = imagenet1k_distance_matrix("info")
    mapped = np.stack([logits.numpy()[:, cols].max(axis=1) for cols in columns], axis=1)
    predicted = mapped.argmax(axis=1)
    mistakes = [row for row in range(len(ids)) if predicted[row] != labels[row]]
    assert chair not in mistakes and wrong in mistakes and predicted[wrong] == OBJECTNET_CLASSES.index("chair")
    expected = np.mean([info[columns[labels[row]][0], columns[predicted[row]][0]] for row in mistakes])
    assert result.value("lca", "info") == pytest.approx(expected, rel=1e-6)
    assert next(r for r in result.rows if r.metric == "lca" and r.variant == "info").denominator == len(mistakes)
