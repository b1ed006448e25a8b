"""Adversarial robustness (Beyond Accuracy, Hesse et al. 2025, Eqs. 3-5): FGSM / PGD accuracy with the model in the loop.

The dataset is a real ``imagenet_val`` build (the fixtures ``test_predict`` builds from) whose labels
are a small random-weight timm model's own predictions on two rows in three (the third row gets
another class), so clean accuracy is neither 0 nor 1 and a tiny eps leaves some rows correct: the
per-row flags compared below are mixed, not all False. Images are resized to 32 px to keep it fast.
"""

from __future__ import annotations

import dataclasses
import io
import json
import logging
import math
import shutil

import numpy as np
import pytest
import torch
import torchattacks
from PIL import Image
from torch import nn
from torchvision import transforms

from imagenet_suite.core.options import BuildOptions
from imagenet_suite.core.runner import build_dataset
from imagenet_suite.dataset.folder import DatasetFolder, build_info_hash
from imagenet_suite.errors import ConfigError
from imagenet_suite.inference import LoadedModel, load_model
from imagenet_suite.inference.adversarial import (
    AdversarialResult,
    AttackOptions,
    adversarial_accuracy,
    adversarial_robustness,
    pixel_space,
    stratified_subset,
)
from imagenet_suite.scoring.metrics.classification import Fraction
from imagenet_suite.scoring.threads import torch_threads
from tests.fixtures.imagenet_layouts import make_val_images, write_folders_layout

ROWS = 12
SIZE = 32
EPS, ALPHA = 0.3 / 255, 0.1 / 255  # small enough that some rows survive this very sensitive random model


@pytest.fixture(scope="module", autouse=True)
def _one_torch_thread():
    """Tiny tensors: an OpenMP team per operation costs more than it saves on a small, busy machine."""
    with torch_threads(1):
        yield


@pytest.fixture(scope="module")
def loaded() -> LoadedModel:
    from timm.data import create_transform

    model = load_model("timm:test_convnext", "none", seed=0)
    config = {**model.data_config, "input_size": (3, SIZE, SIZE)}
    return dataclasses.replace(model, transform=create_transform(**config), data_config=config)


@pytest.fixture(scope="module")
def val(tmp_path_factory, loaded) -> DatasetFolder:
    root = tmp_path_factory.mktemp("adversarial")
    images = make_val_images(ROWS)
    with torch.inference_mode():
        predicted = [int(loaded.model(loaded.transform(decode(image.data))[None]).argmax()) for image in images]
    images = [
        dataclasses.replace(image, label=label if row % 3 else (label + 1) % 1000)
        for row, (image, label) in enumerate(zip(images, predicted))
    ]
    manual = write_folders_layout(root / "manual", images)
    folder = build_dataset(
        "imagenet_val", root / "out", ["default"], options=BuildOptions(manual_dir=manual, shard_size=4, progress=False)
    )
    return DatasetFolder(folder)


def decode(data: bytes) -> Image.Image:
    """timm's ImageFolder loader: PIL, converted to RGB."""
    with Image.open(io.BytesIO(data)) as opened:
        return opened.convert("RGB")


def normalised(loaded: LoadedModel) -> tuple[transforms.Compose, nn.Module]:
    """The model's eval transform without its final Normalize, and the model behind that Normalize."""
    *steps, normalize = loaded.transform.transforms
    assert isinstance(normalize, transforms.Normalize)
    return transforms.Compose(steps), nn.Sequential(normalize, loaded.model)


class Recording(nn.Module):
    """The model, keeping a copy of every input it is called on."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model
        self.seen: list[torch.Tensor] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.seen.append(x.detach().clone())
        return self.model(x)


def attacked_rows(loaded, val, ids):
    """The model in pixel space (eval mode), and the rows ``ids`` decoded one by one with their labels."""
    table = val.read_table("default", "validation", ["id", "image", "label"])
    rows = {row_id: i for i, row_id in enumerate(table.column("id").to_pylist())}
    pixels, model = normalised(loaded)
    images = torch.stack([pixels(decode(table.column("image")[rows[i]].as_py()["bytes"])) for i in ids])
    labels = torch.tensor([table.column("label")[rows[i]].as_py() for i in ids])
    return model.eval(), images, labels


def direct_attacks(loaded, val, ids, *, seed, batch_size, eps, alpha):
    """torchattacks called directly: the rows ``ids``, decoded one by one, attacked in batches of
    ``batch_size`` with PGD seeded by ``seed + batch number`` (inside fork_rng); per batch: clean
    prediction, FGSM, its prediction, PGD, its prediction."""
    model, images, labels = attacked_rows(loaded, val, ids)

    def correct(x, y):
        with torch.no_grad():
            return model(x).argmax(1) == y

    flags = []
    for batch, start in enumerate(range(0, len(ids), batch_size)):
        x, y = images[start : start + batch_size], labels[start : start + batch_size]
        clean = correct(x, y)
        fgsm = correct(torchattacks.FGSM(model, eps=eps)(x, y), y)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed + batch)
            adversarial = torchattacks.PGD(model, eps=eps, alpha=alpha, steps=10, random_start=True)(x, y)
        flags.append(torch.stack([clean, fgsm, correct(adversarial, y)]))
    return torch.cat(flags, dim=1), labels


def test_fgsm_and_pgd_equal_torchattacks_called_directly(loaded, val):
    recording = Recording(loaded.model)
    result = adversarial_accuracy(
        dataclasses.replace(loaded, model=recording),
        val,
        AttackOptions(n=9, seed=3, batch_size=4, eps=EPS, alpha=ALPHA, attack_convention="pixel", workers=0,
                      progress=False),
    )  # fmt: skip
    labels = val.read_table("default", "validation", ["label"]).column("label").to_pylist()
    all_ids = val.read_table("default", "validation", ["id"]).column("id").to_pylist()
    assert list(result.ids) == [all_ids[p] for p in stratified_subset(labels, 9, 3)]

    ours, recording.seen = recording.seen, []
    direct = dataclasses.replace(loaded, model=recording)
    (clean, fgsm, pgd), expected_labels = direct_attacks(
        direct, val, result.ids, seed=3, batch_size=4, eps=EPS, alpha=ALPHA
    )
    # the model saw exactly the same inputs, in the same order (clean, FGSM, 10 PGD steps from the same
    # random start, the attacked images), 3 batches of 4 + 4 + 1 rows
    assert len(ours) == len(recording.seen) == 3 * 14
    assert all(torch.equal(a, b) for a, b in zip(ours, recording.seen, strict=True))
    assert torch.equal(result.labels, expected_labels)
    assert torch.equal(result.clean_correct, clean)
    assert torch.equal(result.fgsm_correct, fgsm)
    assert torch.equal(result.pgd_correct, pgd)
    assert (result.clean, result.fgsm, result.pgd) == (
        Fraction(int(clean.sum()), 9),
        Fraction(int(fgsm.sum()), 9),
        Fraction(int(pgd.sum()), 9),
    )
    # the flags are mixed and the attacks changed some predictions
    for flags in (clean, fgsm, pgd):
        assert 0 < int(flags.sum()) < 9
    assert bool((clean & ~pgd).any()) and bool((clean & ~fgsm).any())
    assert (result.eps, result.alpha, result.steps, result.random_start) == (EPS, ALPHA, 10, True)
    assert result.attack_convention == result.summary()["attack_convention"] == "pixel"

    # moving the Normalize into the model leaves the clean predictions of the model's own eval path
    table = val.take(list(result.ids), "default", "validation", ["image"])
    with torch.inference_mode():
        own = torch.stack([loaded.transform(decode(image["bytes"])) for image in table.column("image").to_pylist()])
        assert torch.equal(loaded.model(own).argmax(1) == result.labels, result.clean_correct)


def test_runs_are_identical_across_runs_and_workers_and_leave_the_model_and_rng_alone(loaded, val):
    rng_before = torch.get_rng_state()
    flags_before = [p.requires_grad for p in loaded.model.parameters()]
    runs = [
        adversarial_accuracy(
            loaded, val, AttackOptions(n=10, seed=1, batch_size=3, eps=EPS, alpha=ALPHA, workers=w, progress=False)
        )
        for w in (0, 2)
    ]
    assert runs[0].ids == runs[1].ids and len(runs[0].ids) == 10
    for field in ("labels", "clean_correct", "fgsm_correct", "pgd_correct"):
        assert torch.equal(getattr(runs[0], field), getattr(runs[1], field)), field
    assert runs[0].summary() == runs[1].summary()
    assert torch.equal(torch.get_rng_state(), rng_before)  # PGD's seeding ran inside fork_rng
    assert [p.requires_grad for p in loaded.model.parameters()] == flags_before
    assert all(p.grad is None for p in loaded.model.parameters())  # gradients w.r.t. the images only
    assert not loaded.model.training


def test_perturbations_stay_in_the_eps_ball_and_in_pixel_range(loaded, val):
    pixels, model = normalised(loaded)
    table = val.read_table("default", "validation", ["image", "label"]).slice(0, 4)
    images = torch.stack([pixels(decode(image["bytes"])) for image in table.column("image").to_pylist()])
    labels = torch.tensor(table.column("label").to_pylist())
    model.eval()
    assert float(images.min()) >= 0 and float(images.max()) <= 1
    eps = 8 / 255
    torch.manual_seed(0)
    for attack in (torchattacks.FGSM(model, eps=eps), torchattacks.PGD(model, eps=eps, alpha=2 / 255, steps=10)):
        adversarial = attack(images, labels)
        assert float((adversarial - images).abs().max()) <= eps + 1e-6
        assert float(adversarial.min()) >= 0 and float(adversarial.max()) <= 1
        assert float((adversarial - images).abs().max()) > eps / 2  # it did move the images


def test_pixel_space_understands_timm_and_torchvision_transforms(loaded):
    import torchvision

    picture = decode(make_val_images(1)[0].data)
    timm_pixels, mean, std = pixel_space(loaded)
    assert (mean, std) == (loaded.data_config["mean"], loaded.data_config["std"])
    x = timm_pixels.transform(picture)
    assert float(x.min()) >= 0 and float(x.max()) <= 1
    assert torch.allclose(transforms.Normalize(mean, std)(x), loaded.transform(picture), atol=1e-6)

    vision = torchvision.models.get_model_weights("resnet18").DEFAULT.transforms()
    other = dataclasses.replace(loaded, transform=vision, data_config=None)
    vision_pixels, mean, std = pixel_space(other)
    assert mean == pytest.approx(vision.mean) and std == pytest.approx(vision.std)
    x = vision_pixels.transform(picture)
    assert float(x.min()) >= 0 and float(x.max()) <= 1 and vision.mean != [0.0, 0.0, 0.0]  # untouched
    assert torch.allclose(transforms.Normalize(mean, std)(x), vision(picture), atol=1e-6)


def test_stratified_subset_is_balanced_seeded_and_sorted():
    labels = [0] * 10 + [1] * 10 + [2] * 3 + [3] * 7
    np.random.default_rng(5).shuffle(labels)

    def per_class(positions):
        return np.bincount([labels[p] for p in positions], minlength=4).tolist()

    assert per_class(stratified_subset(labels, 12, 0)) == [3, 3, 3, 3]
    for n in (13, 20, 25):
        counts = per_class(stratified_subset(labels, n, 0))
        assert sum(counts) == n and counts[2] == 3  # the small class gives all it has, the rest is even
        assert max(counts[i] for i in (0, 1, 3)) - min(counts[i] for i in (0, 1, 3)) <= 1
    subset = stratified_subset(labels, 13, 0)
    assert subset == sorted(set(subset)) and subset == stratified_subset(labels, 13, 0)
    assert stratified_subset(labels, 13, 1) != subset
    # which class gets the extra row depends on the seed
    assert len({per_class(stratified_subset(labels, 13, seed)).index(4) for seed in range(12)}) > 1
    # numpy's Generator is the same on every platform: the subset is pinned
    assert stratified_subset([0, 0, 0, 1, 1, 1, 2, 2, 2], 4, 7) == PINNED
    assert stratified_subset(labels, 30, 0) == stratified_subset(labels, 99, 0) == list(range(30))
    with pytest.raises(ConfigError, match="at least 1 row"):
        stratified_subset(labels, 0, 0)


PINNED = [1, 2, 3, 6]  # stratified_subset([0, 0, 0, 1, 1, 1, 2, 2, 2], 4, seed=7)


def test_a_transform_without_normalize_and_a_dataset_without_label_are_one_line_errors(loaded, val, tmp_path):
    """A transform ending in no Normalize has no [0, 1] pixel space to attack in: an error under the ``pixel``
    convention and for AutoAttack; Beyond Accuracy's ``hesse2025`` attacks its output as it is (as their
    code does for RobustBench's models, whose normalisation is inside the model)."""
    for transform in (
        lambda image: transforms.functional.to_tensor(image),
        transforms.Compose([transforms.ToTensor()]),
    ):
        custom = dataclasses.replace(loaded, transform=transform)
        for options in (
            AttackOptions(n=2, attack_convention="pixel", workers=0, progress=False),
            AttackOptions(n=2, attacks=("fgsm", "autoattack-linf"), workers=0, progress=False),
        ):
            with pytest.raises(ConfigError) as caught:
                adversarial_accuracy(custom, val, options)
            message = str(caught.value)
            assert "does not end in a Normalize" in message and "timm:test_convnext" in message and "\n" not in message
    bare = dataclasses.replace(
        loaded, transform=transforms.Compose([transforms.Resize((SIZE, SIZE)), transforms.ToTensor()])
    )
    result = adversarial_accuracy(bare, val, AttackOptions(n=2, steps=1, workers=0, progress=False))
    assert result.attack_convention == "hesse2025" and len(result.ids) == 2

    copy = tmp_path / "unlabelled"
    shutil.copytree(val.path, copy)
    info = json.loads((copy / "build_info.json").read_text())
    del info["configs"]["default"]["features"]["label"]
    info["build_info_sha256"] = build_info_hash(info)  # a consistent folder whose config has no label
    (copy / "build_info.json").write_text(json.dumps(info))
    with pytest.raises(ConfigError) as caught:
        adversarial_accuracy(loaded, copy, AttackOptions(n=2, workers=0, progress=False))
    message = str(caught.value)
    assert "imagenet_val" in message and "no 'label' column" in message and "\n" not in message


def test_more_images_asked_than_the_split_has_attacks_all_and_says_so(loaded, val, caplog):
    """Issue 39: ``--adversarial`` above the split's rows attacks every row, with one warning line."""
    with caplog.at_level(logging.WARNING, logger="imagenet_suite.inference.adversarial"):
        result = adversarial_accuracy(loaded, val, AttackOptions(n=ROWS + 5, steps=1, workers=0, progress=False))
    assert len(result.ids) == ROWS
    lines = [r.getMessage() for r in caplog.records if r.name == "imagenet_suite.inference.adversarial"]
    assert len(lines) == 1 and "\n" not in lines[0]
    assert f"{ROWS + 5:,} images to attack were asked for (--adversarial)" in lines[0]
    assert f"has {ROWS:,}: all of them are attacked" in lines[0]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="imagenet_suite.inference.adversarial"):
        adversarial_accuracy(loaded, val, AttackOptions(n=ROWS, steps=1, workers=0, progress=False))
    assert not [r for r in caplog.records if r.name == "imagenet_suite.inference.adversarial"]


def test_attack_options_are_checked_when_made_naming_the_parameter():
    for kwargs, message in (
        ({"n": 0}, r"^n must be at least 1 \(rows to attack\), got 0"),
        ({"n": 2, "batch_size": 0}, r"^batch_size must be at least 1, got 0"),
        ({"n": 2, "workers": -1}, r"^workers must be 0 or more, got -1"),
        ({"n": 2, "eps": 2.0}, r"^eps must be a number in \[0, 1\], got 2.0"),
        (
            {"n": 2, "attack_convention": "pixels"},
            r"^attack_convention must be hesse2025 or pixel, got 'pixels'; "
            r"did you mean 'pixel'\?",
        ),
        ({"n": 2, "steps": -1}, r"^steps must be 0 or more, got -1"),
    ):
        with pytest.raises(ConfigError, match=message) as refused:
            AttackOptions(**kwargs)
        assert refused.value.parameters == (message[1:].split()[0],)


def result_of(clean: Fraction, fgsm: Fraction, pgd: Fraction) -> AdversarialResult:
    def flags(fraction: Fraction) -> torch.Tensor:
        return torch.arange(fraction.denominator) < fraction.numerator

    return AdversarialResult(
        ids=tuple(str(i) for i in range(clean.denominator)),
        labels=torch.zeros(clean.denominator, dtype=torch.int64),
        clean_correct=flags(clean),
        correct={"fgsm": flags(fgsm), "pgd": flags(pgd)},
        eps=8 / 255,
        alpha=2 / 255,
        steps=10,
        random_start=True,
        seed=0,
        batch_size=64,
    )


def test_adversarial_robustness_is_the_geometric_mean_of_the_two_ratios():
    from scipy.stats.mstats import gmean

    result = result_of(Fraction(8, 10), Fraction(4, 10), Fraction(2, 10))
    assert result.fgsm_ratio == pytest.approx(0.5) and result.pgd_ratio == pytest.approx(0.25)
    assert result.adversarial_robustness == pytest.approx(math.sqrt(0.125))
    assert result.adversarial_robustness == pytest.approx(float(gmean([0.5, 0.25])))  # Beyond Accuracy's code
    assert adversarial_robustness(0.8, 0.4, 0.2) == pytest.approx(math.sqrt(0.125))
    assert result_of(Fraction(5, 10), Fraction(0, 10), Fraction(3, 10)).adversarial_robustness == 0.0
    unattackable = result_of(Fraction(0, 10), Fraction(0, 10), Fraction(0, 10))
    assert math.isnan(unattackable.fgsm_ratio) and math.isnan(unattackable.pgd_ratio)
    assert math.isnan(unattackable.adversarial_robustness) and math.isnan(adversarial_robustness(0.0, 0.1, 0.1))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_on_cuda_flags_come_back_on_the_cpu_and_the_cuda_rng_is_left_alone(loaded, val):
    cuda_before = torch.cuda.get_rng_state()
    options = AttackOptions(n=6, seed=2, batch_size=4, device="cuda", workers=0, progress=False)
    result = adversarial_accuracy(loaded, val, options)
    assert torch.equal(torch.cuda.get_rng_state(), cuda_before)
    assert result.pgd_correct.device.type == "cpu" and result.pgd_correct.dtype == torch.bool
    assert len(result.ids) == result.clean.denominator == 6
    loaded.model.cpu()


# ----------------------------------------------------------------------------------------- AutoAttack

# Radii small enough that this very sensitive random model keeps some rows under each norm, and a short
# budget (the standard's 100 iterations and 5000 queries are for real runs): every attack of the chain runs.
AUTOATTACKS = ("autoattack-linf:eps=0.1/255", "autoattack-l1:eps=0.3")
BUDGET = {"autoattack_iterations": 5, "autoattack_queries": 10}


def direct_autoattack(loaded, val, ids, *, norm, eps, seed, batch_size):
    """The authors' AutoAttack (pyautoattack) called directly: the rows ``ids`` in batches of ``batch_size``,
    ``version='standard'`` with the test budget and seed ``seed + batch number`` (inside fork_rng); per batch
    the rows ``run_standard_evaluation`` returns correctly classified."""
    from pyautoattack import AutoAttack

    model, images, labels = attacked_rows(loaded, val, ids)
    flags = []
    for batch, start in enumerate(range(0, len(ids), batch_size)):
        x, y = images[start : start + batch_size], labels[start : start + batch_size]
        with torch.random.fork_rng(devices=[]):
            attack = AutoAttack(model, norm=norm, eps=eps, seed=seed + batch, version="standard", device="cpu")
            for apgd in (attack.apgd, attack.apgd_targeted):
                apgd.n_iter = apgd.n_iter_orig = BUDGET["autoattack_iterations"]
            attack.fab.n_iter = BUDGET["autoattack_iterations"]
            attack.square.n_queries = BUDGET["autoattack_queries"]
            _, predicted = attack.run_standard_evaluation(x, y, batch_size=len(x))
        flags.append(predicted == y)
    return torch.cat(flags)


def test_autoattack_accuracies_equal_the_authors_autoattack_called_directly(loaded, val):
    options = AttackOptions(n=6, seed=1, batch_size=3, attacks=AUTOATTACKS, workers=0, progress=False, **BUDGET)
    result = adversarial_accuracy(loaded, val, options)
    assert list(result.correct) == ["autoattack-linf:eps=0.000392157", "autoattack-l1:eps=0.3"]
    for (label, flags), spec in zip(result.correct.items(), options.attacks, strict=True):
        expected = direct_autoattack(loaded, val, result.ids, norm=spec.norm, eps=spec.eps, seed=1, batch_size=3)
        assert torch.equal(flags, expected), label
        assert result.accuracy(label) == Fraction(int(expected.sum()), 6)
        assert not bool((flags & ~result.clean_correct).any())  # robust rows are clean-correct rows
        assert result.autoattack[label]["norm"] == spec.norm and result.autoattack[label]["eps"] == spec.eps
        assert result.autoattack[label]["iterations"] == 5 and result.autoattack[label]["queries"] == 10
    # each norm flipped some clean-correct rows and left others
    for label, flags in result.correct.items():
        assert 0 < int(flags.sum()) < int(result.clean_correct.sum()), label
    assert math.isnan(result.adversarial_robustness)  # Beyond Accuracy's AR needs FGSM and PGD


def test_a_resumed_run_gives_the_flags_of_an_uninterrupted_one_byte_for_byte(loaded, val, tmp_path, monkeypatch):
    import imagenet_suite.inference.adversarial as adversarial

    attacks = ("fgsm", "pgd", AUTOATTACKS[0])
    options = AttackOptions(n=6, seed=1, batch_size=3, eps=EPS, alpha=ALPHA, attacks=attacks, workers=0,
                            progress=False, **BUDGET)  # fmt: skip
    whole = adversarial_accuracy(loaded, val, options)

    def saved(result) -> bytes:
        buffer = io.BytesIO()
        torch.save({"clean": result.clean_correct, **result.correct}, buffer)
        return buffer.getvalue() + json.dumps(result.summary()).encode()

    folder = tmp_path / "adversarial.partial"
    resumable = dataclasses.replace(options, resume=folder)
    real, calls = adversarial.attack_batch, []

    def stop_in_the_second_batch(*args):
        calls.append(args[-1])
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args)

    monkeypatch.setattr(adversarial, "attack_batch", stop_in_the_second_batch)
    with pytest.raises(KeyboardInterrupt):
        adversarial_accuracy(loaded, val, resumable)
    assert sorted(p.name for p in folder.iterdir()) == ["manifest.json", "unit_0000000.pt"]
    with pytest.raises(ConfigError, match=r"holds partial outputs of a different run \(differs in \['seed'\]\)"):
        adversarial_accuracy(loaded, val, dataclasses.replace(resumable, seed=2))
    with pytest.raises(ConfigError, match=r"a different run \(differs in \['attack_convention'\]\)"):
        adversarial_accuracy(loaded, val, dataclasses.replace(resumable, attack_convention="pixel"))

    calls.clear()
    monkeypatch.setattr(adversarial, "attack_batch", lambda *args: calls.append(args[-1]) or real(*args))
    resumed = adversarial_accuracy(loaded, val, resumable)
    assert calls == [1 + 1]  # batch 1 (seed + batch index); batch 0 came from its chunk
    assert saved(resumed) == saved(whole)  # byte-identical to the first run (AutoAttack seeded per batch)
    assert not folder.exists()  # removed once the run finished


def test_attack_names_and_radii_are_checked_naming_attacks(monkeypatch):
    from importlib import metadata

    from imagenet_suite.inference import autoattack
    from imagenet_suite.inference.autoattack import AUTOATTACK_EPS, parse_attacks

    specs = parse_attacks("fgsm,autoattack-linf,autoattack-l2,autoattack-l1,pgd")
    assert [(s.label, s.eps) for s in specs] == [
        ("fgsm", None),
        ("autoattack-linf", 4 / 255),
        ("autoattack-l2", 2.0),
        ("autoattack-l1", 75.0),
        ("pgd", None),
    ]
    assert AUTOATTACK_EPS == {"autoattack-linf": 4 / 255, "autoattack-l2": 2.0, "autoattack-l1": 75.0}
    assert parse_attacks(["autoattack-linf:eps=4/255"])[0].label == "autoattack-linf"  # the default, spelled out
    assert parse_attacks(["autoattack-l1:eps=12"])[0] == autoattack.AttackSpec("autoattack-l1", 12.0)
    assert parse_attacks(parse_attacks(["autoattack-l2:eps=0.5"])) == parse_attacks(["autoattack-l2:eps=0.5"])
    for bad, message in (
        ("cw", r"unknown attack 'cw'; expected one of fgsm, pgd, autoattack-linf, autoattack-l2, autoattack-l1"),
        ("pgd:eps=4/255", r"'pgd:eps=4/255': pgd is Beyond Accuracy's fixed protocol"),
        ("autoattack-l2:eps=abc", r"expected autoattack-l2:eps=VALUE, VALUE a positive number or a/b"),
        ("autoattack-l2:eps=-1", r"expected autoattack-l2:eps=VALUE"),
        ("autoattack-l2:eps=1/0", r"expected autoattack-l2:eps=VALUE"),
        ("autoattack-l2:steps=3", r"expected autoattack-l2:eps=VALUE"),
        ("autoattack-linf:eps=2", r"an L∞ radius above 1 covers all of \[0, 1\] pixel space"),
        ("fgsm,pgd,fgsm", r"fgsm is named twice"),
        ("", r"unknown attack ''"),
    ):
        with pytest.raises(ConfigError, match=message) as refused:
            parse_attacks(bad)
        assert refused.value.parameters == ("attacks",) and "\n" not in str(refused.value)
    with pytest.raises(ConfigError, match=r"autoattack_iterations must be an integer of at least 5, got 4"):
        AttackOptions(n=2, autoattack_iterations=4)

    def absent(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(autoattack.metadata, "version", absent)
    with pytest.raises(ConfigError, match=r"AutoAttack \(the pyautoattack package\) is not installed; pip install"):
        autoattack.library_version()


def test_evaluate_records_autoattack_types_and_adds_only_the_attacks_it_lacks(loaded, val, tmp_path, monkeypatch):
    import imagenet_suite.inference.adversarial as adversarial
    from imagenet_suite.inference import PredictOptions
    from imagenet_suite.inference.evaluate import run_suite
    from imagenet_suite.inference.suite_options import SuiteOptions
    from imagenet_suite.scoring.summary.leaderboard import perturbation_accuracies
    from imagenet_suite.scoring.summary.suite_json import read_suite

    @dataclasses.dataclass(frozen=True)
    class Quick(AttackOptions):  # the standard's 100 iterations and 5000 queries take minutes on a CPU
        autoattack_iterations: int = BUDGET["autoattack_iterations"]
        autoattack_queries: int = BUDGET["autoattack_queries"]

    computed = []

    def recorded_call(model, dataset, options, **where):
        computed.append([spec.label for spec in options.attacks])
        assert options.resume == run_dir / "adversarial.partial" and (options.n, options.batch_size) == (ROWS, 8)
        return adversarial_accuracy(model, dataset, options, **where)

    monkeypatch.setattr(adversarial, "AttackOptions", Quick)
    monkeypatch.setattr(adversarial, "adversarial_accuracy", recorded_call)
    run_dir = tmp_path / "run"

    def evaluate(*attacks: str) -> dict:
        predict = PredictOptions(batch_size=8, workers=0, progress=False)
        return run_suite(
            loaded, [val.path], run_dir, SuiteOptions(predict=predict, adversarial=ROWS, attacks=attacks, bootstrap=0)
        )

    first = evaluate("fgsm", "pgd", "autoattack-linf")
    attacks = json.loads((run_dir / "adversarial.json").read_text())
    assert first["summary"]["adversarial"] == attacks and computed == [["fgsm", "pgd", "autoattack-linf"]]
    linf = attacks["autoattack"]["autoattack-linf"]
    alone = adversarial_accuracy(loaded, val, Quick(n=ROWS, batch_size=8, attacks=("autoattack-linf",), workers=0))
    assert linf["accuracy"] == alone.accuracy("autoattack-linf").value  # the other attacks of a batch do not matter
    assert attacks["clean_accuracy"] == alone.clean.value and 0 < alone.clean.value < 1
    assert {k: v for k, v in linf.items() if k != "accuracy"} == {
        "norm": "Linf", "eps": 4 / 255, "version": "standard", "attacks": ["apgd-ce", "apgd-t", "fab-t", "square"],
        "iterations": 5, "queries": 10, "library": "pyautoattack 0.2.0",
    }  # fmt: skip
    assert attacks["attack"] == (
        "torchattacks FGSM eps=8/255; PGD eps=8/255 alpha=2/255 steps=10 random_start on the normalised inputs, "
        "clamped to [0,1] (hesse2025: Beyond Accuracy's code); AutoAttack standard Linf eps=0.0156863 (5 iterations, "
        "10 queries) (pyautoattack 0.2.0), inputs in [0,1]"
    )
    assert attacks["attack_convention"] == "hesse2025"
    # Beyond Accuracy's Table 8 variant: AA-A / A as the adversarial dimension, the other eight as QUBA's
    variant = first["summary"]["quba_autoattack"]
    assert variant["adversarial_robustness"] == linf["accuracy"] / attacks["clean_accuracy"]
    assert set(variant["missing"]) == set(first["summary"]["quba"]["missing"]) - {"adversarial_robustness"}
    assert variant["score"] is None  # only ImageNet val: the other dimensions are missing
    section = (run_dir / "suite.md").read_text().split("## QUBA with AutoAttack (Beyond Accuracy, Table 8)\n")[1]
    assert section.startswith(f"\n{variant['note']}\n\nNo score; missing:") and all(
        f"- `{name}`: " in section for name in variant["missing"]
    )

    computed.clear()
    second = evaluate("fgsm", "pgd", "autoattack-linf", "autoattack-l2")
    assert computed == [["autoattack-l2"]]  # FGSM, PGD and L∞ come from adversarial.json
    again = second["summary"]["adversarial"]
    kept = [key for key in attacks if key not in ("autoattack", "attack")]
    assert {key: again[key] for key in kept} == {key: attacks[key] for key in kept}
    assert again["autoattack"]["autoattack-linf"] == linf and again["autoattack"]["autoattack-l2"]["eps"] == 2.0
    assert not (run_dir / "adversarial.partial").exists()
    computed.clear()
    third = evaluate("autoattack-l2")
    assert computed == [] and third["summary"]["adversarial"] == again  # all recorded: nothing is attacked
    # Heuillet et al.'s voters: each attack is a perturbation type of the attacked subset
    name = f"adversarial ({ROWS} rows, seed 0)"
    assert perturbation_accuracies(read_suite(run_dir)) == {
        (name, "clean"): again["clean_accuracy"],
        (name, "fgsm"): again["fgsm_accuracy"],
        (name, "pgd"): again["pgd_accuracy"],
        (name, "autoattack-l2"): again["autoattack"]["autoattack-l2"]["accuracy"],
        (name, "autoattack-linf"): linf["accuracy"],
    }


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_autoattack_on_cuda_is_seeded_and_leaves_the_cuda_rng_alone(loaded, val):
    cuda_before = torch.cuda.get_rng_state()
    options = AttackOptions(n=6, seed=1, batch_size=3, attacks=AUTOATTACKS, device="cuda", workers=0, progress=False,
                            **BUDGET)  # fmt: skip
    with torch.backends.cudnn.flags(deterministic=True, benchmark=False):
        runs = [adversarial_accuracy(loaded, val, options) for _ in range(2)]
    assert torch.equal(torch.cuda.get_rng_state(), cuda_before)
    for label in runs[0].correct:
        assert torch.equal(runs[0].correct[label], runs[1].correct[label]), label
        assert runs[0].correct[label].device.type == "cpu"
    loaded.model.cpu()
