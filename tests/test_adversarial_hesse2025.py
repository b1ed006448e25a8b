"""QUBA's adversarial dimension under Beyond Accuracy's protocol (Hesse et al. 2025; ``attack_convention
"hesse2025"``) equals the authors' own function run on the same model, images and seed.

:func:`test_adversarial_robustness` and :func:`test_accuracy` below are copied from Beyond Accuracy's code
(verbatim but for whitespace, laid out by this repository's formatter), ``helper/benchmarks.py`` of https://github.com/visinf/beyond-accuracy at commit
f330d7c3252d2d3d1849cbb14de158455b56bdda, licensed under the Apache License 2.0 (the repository's
``LICENSE``; no NOTICE file), and so is :class:`StandardModel` (with its base ``AbstractModel``, the
``abstractmethod`` ``forward`` left out) from ``helper/models/model_wrappers.py``; they run with the lock's
torchattacks 3.5.1, the version their environment pins. Their ``eval.py`` passes these functions the
DataLoader of ``helper/generate_data.py:load_dataset``: an ``ImageFolder`` (PIL, converted to RGB) with the
weights' eval transform, for a timm model ``create_transform(**resolve_data_config({}, model=model))``,
Normalize included, batched by the default collate (``torch.stack``). Here that loader is a list with one
such batch, built from the rows our attack picked: the images of a fixture ``imagenet_val`` build, decoded as
ImageFolder does, through that transform.

The model is timm's tiny ``test_resnet`` (BatchNorm; mean/std 0.5), randomly initialised and saved to a
file, loaded by ``load_model`` for ours and by timm + ``load_state_dict`` for theirs (their ``load_model``
with a file in place of the pretrained download). Two of three rows are labelled with its own clean
prediction, so the clean accuracy is neither 0 (their ratio would divide by it) nor 1, and some attacked
rows stay right: the flags compared are mixed.

Seed: their ``eval.py`` calls ``torch.manual_seed(seed)`` once at start, so PGD's random start there is the
next draw of torch's RNG after whatever came before; ours seeds each batch with ``seed + batch index``. On
one batch with the RNG seeded just before, both draw the same start.
"""

from __future__ import annotations

import dataclasses
import io
import math

import pytest
import torch
import torchattacks
from PIL import Image
from torch import nn
from tqdm import tqdm

from imagenet_suite.core.options import BuildOptions
from imagenet_suite.core.runner import build_dataset
from imagenet_suite.dataset.folder import DatasetFolder
from imagenet_suite.inference import load_model
from imagenet_suite.inference.adversarial import AttackOptions, adversarial_accuracy
from imagenet_suite.scoring.summary.quba import geometric_mean
from imagenet_suite.scoring.threads import torch_threads
from tests.fixtures.imagenet_layouts import make_val_images, write_folders_layout

ROWS = 12
SEED = 5
ARCHITECTURE = "test_resnet"


# ----------------------------------------------------------------------------------------------------------
# Beyond Accuracy's code, verbatim but for whitespace (Apache License 2.0; see the module docstring). Their
# globals: torch, torchattacks, tqdm.


def test_accuracy(model, dataloader, args):
    """
    Computes the top-1 accuracy on a dataset specified by the dataloader

    :model: model to test
    :dataloader: dataset you want to use
    :return: Top-1 Accuracy
    """

    correct = 0
    total = 0
    print("Computing Top-1 Accuracy...")
    for inputs, targets in tqdm(dataloader):
        inputs = inputs.to(args.device)
        targets = targets.to(args.device)

        outputs = model(inputs)
        outputs = outputs.to(args.device)

        correct += torch.eq(outputs.argmax(1), targets).sum().item()
        total += targets.size(0)

    acc = correct / total
    return acc


def test_adversarial_robustness(model, dataloader, attack, device):
    """
    Test the adverserial robustness of a given model on a given dataset by using a {attack} attack
    :param model: the model you want to test
    :param dataloader: the dataset you want to test the model on
    :param: attack: the type of attack of attack you want to use. The options are PGD and FGSM
    :device: device for computations
    :return: the accuracy on the dataset corrupted by a chosen attack
    """
    chosen_attack = None
    if attack == "PGD":
        chosen_attack = torchattacks.PGD(model)
    elif attack == "FGSM":
        chosen_attack = torchattacks.FGSM(model, eps=8 / 255)
    else:
        raise ValueError("Please choose a valid attack")

    correct = 0
    correct_corr = 0
    total = 0
    adv_inputs = None
    print("Computing Top-1 Accuracy after", attack, "attack...")
    for input, target in tqdm(dataloader):
        input = input.to(device)
        target = target.to(device)

        input.requires_grad = True

        adv_inputs = chosen_attack(input, target)
        outputs = model(input)
        correct += torch.eq(outputs.argmax(1), target).sum().item()

        adv_inputs = adv_inputs.to(device)
        outputs_corr = model(adv_inputs)
        correct_corr += torch.eq(outputs_corr.argmax(1), target).sum().item()

        total += target.size(0)

    acc_corr = correct_corr / total
    acc_normal = correct / total
    return acc_corr / acc_normal


class AbstractModel(nn.Module):
    def __init__(self, model, model_name, transform):
        """
        An abstract wrapper for PyTorch models implementing functions required for evaluation.
        Args:
            model: PyTorch neural network model
        """
        super().__init__()
        self.model = model
        self.model_name = model_name
        self.transform = transform

    def __call__(self, input):
        return self.model(input)

    def to(self, device):
        self.model = self.model.to(device)

    def eval(self):
        self.model.eval()

    def train(self):
        self.model.train()


class StandardModel(AbstractModel):
    """
    A wrapper for standard PyTorch models (e.g. ResNet, VGG, AlexNet, ...).
    Args:
        model: PyTorch neural network model
    """

    def load_state_dict(self, state_dict):
        self.model.load_state_dict(state_dict)


# (end of Beyond Accuracy's code) -------------------------------------------------------------------------
test_accuracy.__test__ = False  # their functions, not tests of this module
test_adversarial_robustness.__test__ = False


@pytest.fixture(scope="module", autouse=True)
def _one_torch_thread():
    """Tiny tensors: an OpenMP team per operation costs more than it saves on a small, busy machine."""
    with torch_threads(1):
        yield


@pytest.fixture(scope="module")
def weights(tmp_path_factory):
    """A random init of ``test_resnet`` as a state-dict file (``torch.save``)."""
    import timm

    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("weights") / f"{ARCHITECTURE}.pt"
    torch.save(timm.create_model(ARCHITECTURE).state_dict(), path)
    return path


def decode(data: bytes) -> Image.Image:
    """torchvision ImageFolder's loader: PIL, converted to RGB."""
    with Image.open(io.BytesIO(data)) as opened:
        return opened.convert("RGB")


@pytest.fixture(scope="module")
def val(tmp_path_factory, weights) -> DatasetFolder:
    """An ``imagenet_val`` build whose labels are the model's own clean predictions on two rows in three."""
    loaded = load_model(f"timm:{ARCHITECTURE}", weights)
    root = tmp_path_factory.mktemp("hesse2025")
    images = make_val_images(ROWS)
    with torch.inference_mode():
        predicted = [int(loaded.model(loaded.transform(decode(image.data))[None]).argmax()) for image in images]
    images = [
        dataclasses.replace(image, label=label if row % 3 else (label + 1) % 1000)
        for row, (image, label) in enumerate(zip(images, predicted))
    ]
    manual = write_folders_layout(root / "manual", images)
    folder = build_dataset(
        "imagenet_val", root / "out", ["default"], options=BuildOptions(manual_dir=manual, progress=False)
    )
    return DatasetFolder(folder)


def their_model(weights):
    """Their ``load_model`` for a timm architecture, with the weights file in place of ``pretrained=True``:
    the model and its transform (``create_transform(**resolve_data_config({}, model=model))``)."""
    import timm
    from timm.data import create_transform, resolve_data_config

    model = timm.create_model(ARCHITECTURE, pretrained=False)
    model.load_state_dict(torch.load(weights, weights_only=True))
    return model, create_transform(**resolve_data_config({}, model=model))


def their_batch(val: DatasetFolder, ids, transform) -> tuple[torch.Tensor, torch.Tensor]:
    """The rows ``ids`` as their DataLoader yields them: ImageFolder's PIL image through the transform,
    stacked, with the labels."""
    table = val.take(list(ids), "default", "validation", ["image", "label"])
    images = torch.stack([transform(decode(image["bytes"])) for image in table.column("image").to_pylist()])
    return images, torch.tensor(table.column("label").to_pylist())


class Recording(nn.Module):
    """The model, keeping every input it is called on and the predictions it returns."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model
        self.seen: list[torch.Tensor] = []
        self.predicted: list[torch.Tensor] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.seen.append(x.detach().clone())
        logits = self.model(x)
        self.predicted.append(logits.detach().argmax(1))
        return logits


def test_fgsm_and_pgd_accuracies_equal_beyond_accuracys_test_adversarial_robustness(weights, val):
    compare_with_theirs(weights, val, "cpu")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_on_cuda_too_the_tensors_and_accuracies_equal_theirs(weights, val):
    """On CUDA their tensors are normalised on the CPU (the DataLoader) and moved; ours are normalised on the
    device: the same float32 subtraction and division, so the same bits (deterministic kernels, as for any
    bit-identical rerun on CUDA)."""
    with torch.backends.cudnn.flags(deterministic=True, benchmark=False):
        compare_with_theirs(weights, val, "cuda")


def compare_with_theirs(weights, val: DatasetFolder, device: str) -> None:
    """Our ``hesse2025`` attack and their functions on the same model, images and seed, on ``device``: the
    tensors the model sees and the accuracies are equal."""
    ours_model = load_model(f"timm:{ARCHITECTURE}", weights)
    recording = Recording(ours_model.model)
    options = AttackOptions(n=ROWS, seed=SEED, batch_size=ROWS, device=device, workers=0, progress=False)
    assert options.attack_convention == "hesse2025"  # the default; one batch
    result = adversarial_accuracy(dataclasses.replace(ours_model, model=recording), val, options)
    ours = [tensor.cpu() for tensor in recording.seen]

    model, transform = their_model(weights)
    model.to(device)
    images, labels = their_batch(val, result.ids, transform)
    assert torch.equal(labels, result.labels)
    theirs = {}
    for attack in ("PGD", "FGSM"):
        recorded = Recording(model).eval()  # their benchmark() calls model.eval() before the attacks
        torch.manual_seed(SEED)  # their eval.py seeds once; here just before the one batch
        ratio = test_adversarial_robustness(recorded, [(images.clone(), labels)], attack, device)
        theirs[attack] = (ratio, [tensor.cpu() for tensor in recorded.seen], recorded.predicted[-1].cpu())
    clean_accuracy = test_accuracy(model.eval(), [(images, labels)], type("Args", (), {"device": device}))

    # the same tensors reached the model: ours clean, FGSM's gradient and attacked images, PGD's 10 steps and
    # attacked images; theirs per attack: the steps, the clean tensor (their loader's), the attacked tensor
    pgd, fgsm = theirs["PGD"][1], theirs["FGSM"][1]
    assert len(ours) == 1 + 2 + 11 and len(pgd) == 10 + 2 and len(fgsm) == 1 + 2
    assert torch.equal(ours[0], pgd[10]) and torch.equal(ours[0], fgsm[1]) and torch.equal(ours[0], images)
    assert torch.equal(ours[1], fgsm[0]) and torch.equal(ours[2], fgsm[2])
    assert all(torch.equal(a, b) for a, b in zip(ours[3:13], pgd[:10], strict=True))
    assert torch.equal(ours[13], pgd[11])
    # the attacks moved the normalised tensors (mean/std 0.5: in [-1, 1]) and clamped them to [0, 1]
    assert float(images.min()) < 0 and float(ours[13].min()) >= 0 and float(ours[13].max()) <= 1

    # the accuracies: clean, and each attack's correct rows as their function counts them
    assert result.clean.value == clean_accuracy
    for attack, ours_accuracy in (("PGD", result.pgd), ("FGSM", result.fgsm)):
        ratio, _, predicted = theirs[attack]
        assert ours_accuracy.numerator == int((predicted == labels).sum())
        assert ours_accuracy.value / result.clean.value == ratio  # their returned value, exactly
    assert result.adversarial_robustness == pytest.approx(
        geometric_mean([theirs["PGD"][0], theirs["FGSM"][0]]), abs=1e-15
    )  # eval.py: gmean([pgd, fgsm])
    # mixed flags: some rows right clean, some kept and some lost under each attack
    assert 0 < result.clean.numerator < ROWS
    for flags in (result.fgsm_correct, result.pgd_correct):
        assert bool((result.clean_correct & flags).any()) and bool((result.clean_correct & ~flags).any())
    assert math.isfinite(result.adversarial_robustness)


def test_their_model_wrapper_leaves_the_model_in_train_mode_after_an_attack(weights, val):
    """A difference we do not reproduce (docs/papers/hesse2025.md): their ``StandardModel`` overrides
    ``eval``/``train`` to switch only the wrapped model, so the wrapper's own ``training`` stays True, and
    torchattacks 3.5.1 "restores" that mode after each attack: the model then predicts the clean and the
    attacked images in train mode (BatchNorm on the batch's statistics, which it also accumulates). Ours
    predicts in eval mode throughout."""
    model, transform = their_model(weights)
    wrapper = StandardModel(model=model, model_name=ARCHITECTURE, transform=transform)
    wrapper.eval()  # what their benchmark() does
    assert not model.training and wrapper.training
    ids = val.read_table("default", "validation", ["id"]).column("id").to_pylist()
    images, labels = their_batch(val, ids, transform)
    with torch.no_grad():
        right_in_eval_mode = int((model(images).argmax(1) == labels).sum())
    running_mean = model.bn1.running_mean.clone()
    torchattacks.FGSM(wrapper, eps=8 / 255)(images, labels)  # the attack call of test_adversarial_robustness
    assert model.training  # left in train mode
    with torch.no_grad():
        right_in_train_mode = int((wrapper(images).argmax(1) == labels).sum())  # their next `model(input)`
    assert not torch.equal(model.bn1.running_mean, running_mean)  # its BatchNorm statistics moved
    assert right_in_eval_mode == 8 > right_in_train_mode  # eval mode: the 8 planted rows; train mode: fewer
