"""Class balance: the QUBA code convention and the paper's Eq. 10-11 convention."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from imagenet_suite.scoring.metrics.class_balance import class_balance


def quba_code_reference(correct: np.ndarray, target: np.ndarray, labels: np.ndarray, classes: int):
    """QUBA: 1 - torch.std(per-class accuracy) and 1 - mean_c np.std(target probs of class c)."""
    present = [c for c in range(classes) if (labels == c).any()]
    class_acc = torch.tensor([correct[labels == c].mean() for c in present], dtype=torch.float64)
    f_acc = 1 - torch.std(class_acc).item()
    f_conf = 1 - np.mean([np.std(target[labels == c]) for c in present])
    return f_acc, f_conf


def paper_reference(correct, target, labels, classes):
    present = [c for c in range(classes) if (labels == c).any()]
    acc, conf = correct.mean(), target.mean()
    f_acc = 1 - math.sqrt(np.mean([(correct[labels == c].mean() - acc) ** 2 for c in present]))
    f_conf = 1 - math.sqrt(np.mean([(target[labels == c].mean() - conf) ** 2 for c in present]))
    return f_acc, f_conf


@pytest.fixture(scope="module")
def sample():
    rng = np.random.default_rng(4)
    labels = rng.integers(0, 30, 900)
    labels[labels == 29] = 28  # class 29 has no images
    skill = rng.uniform(0.3, 0.95, 30)
    correct = rng.random(900) < skill[labels]
    target = np.clip(np.where(correct, rng.beta(5, 2, 900), rng.beta(1, 6, 900)), 0, 1)
    return correct, target, labels


@pytest.mark.parametrize(
    ("convention", "reference"), [("reference_impl", quba_code_reference), ("paper_eq11", paper_reference)]
)
def test_class_balance_matches_reference(sample, convention, reference):
    correct, target, labels = sample
    result = class_balance(
        torch.from_numpy(correct), torch.from_numpy(target).float(), torch.from_numpy(labels), 30, convention
    )
    f_acc, f_conf = reference(correct, target.astype(np.float32).astype(np.float64), labels, 30)
    assert result.accuracy_balance == pytest.approx(f_acc, abs=1e-12)
    assert result.confidence_balance == pytest.approx(f_conf, abs=1e-7)
    assert result.value == pytest.approx(math.sqrt(f_acc * f_conf), abs=1e-7)


def test_conventions_differ_where_the_paper_and_code_differ():
    # every class is equally accurate on average, but within-class confidences spread widely:
    # Eq. 11 (spread of class means) sees perfect balance, the code (mean within-class std) does not
    labels = torch.tensor([0, 0, 1, 1])
    correct = torch.tensor([True, False, True, False])
    target = torch.tensor([0.9, 0.1, 0.9, 0.1])
    paper = class_balance(correct, target, labels, 2, "paper_eq11")
    code = class_balance(correct, target, labels, 2, "reference_impl")
    assert paper.confidence_balance == pytest.approx(1.0) and paper.accuracy_balance == pytest.approx(1.0)
    assert code.confidence_balance == pytest.approx(1 - 0.4) and code.accuracy_balance == pytest.approx(1.0)


def test_unknown_convention_is_refused():
    with pytest.raises(ValueError, match="unknown class balance convention"):
        class_balance(torch.tensor([True]), torch.tensor([0.5]), torch.tensor([0]), 1, "eq12")
