"""Zero-shot open_clip classifiers (``predict --model open_clip:<arch> --weights FILE``): the logits are
open_clip's own zero-shot computation on the same images, the features give NINCO's MCM by hand, the
text embeddings are cached and checked, and bad inputs are one line.

The model is a tiny random-init open_clip architecture (a config registered with
``open_clip.add_model_config``, 16-d embeddings), saved to a safetensors file; the dataset is a real
``imagenet_val`` build from tiny JPEGs (grayscale and CMYK ones included), as in tests/test_predict.py.
"""

from __future__ import annotations

import io
import json
import logging

import pytest
import torch
from PIL import Image

from imagenet_suite.core.options import BuildOptions
from imagenet_suite.core.runner import build_dataset
from imagenet_suite.dataset.folder import DatasetFolder
from tests.fixtures.imagenet_layouts import make_val_images, write_folders_layout
from tests.helpers import run_cli

open_clip = pytest.importorskip("open_clip")

ARCH = "imagenet-suite-test-clip"
TINY = {
    "embed_dim": 16,
    "vision_cfg": {"image_size": 32, "layers": 1, "width": 32, "head_width": 16, "patch_size": 8},
    "text_cfg": {"context_length": 24, "vocab_size": 49408, "width": 16, "heads": 2, "layers": 1},
}
TEMPLATES = ("a photo of a {}.", "a blurry drawing of the {}.")


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """The tiny architecture registered, its random weights in a file, and a 6-image val build."""
    from safetensors.torch import save_file

    root = tmp_path_factory.mktemp("zero_shot")
    (root / f"{ARCH}.json").write_text(json.dumps(TINY))
    open_clip.add_model_config(root / f"{ARCH}.json")
    with torch.random.fork_rng():
        torch.manual_seed(3)
        model = open_clip.create_model(ARCH)
    save_file(model.state_dict(), str(root / "clip.safetensors"))
    (root / "templates.txt").write_text("\n".join(TEMPLATES) + "\n")
    manual = write_folders_layout(root / "manual", make_val_images(6))
    folder = build_dataset(
        "imagenet_val", root / "out", ["default"], options=BuildOptions(manual_dir=manual, shard_size=4, progress=False)
    )
    return {"root": root, "weights": root / "clip.safetensors", "val": DatasetFolder(folder)}


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("text-embeddings")


@pytest.fixture(autouse=True)
def _cache(shared_cache, monkeypatch):
    """One text-embedding cache for the module (the cache test uses its own)."""
    monkeypatch.setenv("IMAGENET_SUITE_ZERO_SHOT_CACHE", str(shared_cache))


def predict(world, out, *extra: str, check: bool = True):
    return run_cli(
        "predict", str(world["val"].path), "--model", f"open_clip:{ARCH}", "--weights", str(world["weights"]),
        "--out", str(out), "--device", "cpu", "--workers", "0", "--no-progress", "--batch-size", "4", *extra,
        check=check,
    )  # fmt: skip


def open_clip_logits(world, templates) -> dict[str, torch.Tensor]:
    """open_clip's zero-shot evaluation, image by image: its eval transform of the PIL image, encode_image,
    L2-normalise, ``100. * image_features @ build_zero_shot_classifier(...)`` (open_clip_train's zero_shot.py)."""
    from safetensors.torch import load_file

    model, _, preprocess = open_clip.create_model_and_transforms(ARCH)
    model.load_state_dict(load_file(str(world["weights"])))
    model.eval()
    classifier = open_clip.build_zero_shot_classifier(
        model, open_clip.get_tokenizer(ARCH), open_clip.IMAGENET_CLASSNAMES, templates, num_classes_per_batch=250
    )
    table = world["val"].read_table("default", "validation", ["id", "image"])
    expected = {}
    with torch.no_grad():
        for row_id, image in zip(table.column("id").to_pylist(), table.column("image").to_pylist()):
            features = model.encode_image(preprocess(Image.open(io.BytesIO(image["bytes"])).convert("RGB"))[None])
            features = features / features.norm(dim=-1, keepdim=True)
            expected[row_id] = (100.0 * features @ classifier)[0]
    return expected


def assert_open_clip_logits(outputs: dict, expected: dict[str, torch.Tensor]) -> None:
    assert outputs["ids"] == list(expected)
    want = torch.stack(list(expected.values()))
    assert outputs["logits"].shape == (6, 1000)
    assert float(want.std(dim=0).mean()) > 0.1  # the images give different logits: the comparison can fail
    torch.testing.assert_close(outputs["logits"], want, rtol=1e-5, atol=1e-4)


@pytest.fixture(scope="module")
def photo_run(world, tmp_path_factory, shared_cache):
    """``--prompts photo --features --zero-shot-stats``: outputs and detector statistics."""
    root = tmp_path_factory.mktemp("photo")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("IMAGENET_SUITE_ZERO_SHOT_CACHE", str(shared_cache))
        predict(world, root / "o.pt", "--prompts", "photo", "--features", "--zero-shot-stats", str(root / "s.pt"))
    return {"root": root, "outputs": torch.load(root / "o.pt"), "stats": root / "s.pt"}


def test_photo_prompts_give_open_clips_zero_shot_logits(world, photo_run):
    outputs = photo_run["outputs"]
    assert_open_clip_logits(outputs, open_clip_logits(world, ("a photo of a {}",)))
    head = outputs["zero_shot"]
    assert (head["class_names"], head["prompts"], head["prompts_per_class"]) == ("clip", "photo", 1)
    assert (head["logit_scale"], head["logit_bias"], head["probabilities"]) == (100.0, None, "softmax")


def test_a_templates_file_gives_open_clips_zero_shot_logits(world, tmp_path):
    predict(world, tmp_path / "o.pt", "--prompts", str(world["root"] / "templates.txt"))
    outputs = torch.load(tmp_path / "o.pt")
    assert_open_clip_logits(outputs, open_clip_logits(world, TEMPLATES))
    assert outputs["zero_shot"]["prompts_per_class"] == 2


def test_features_give_ninco_mcm_and_cosine_by_hand(photo_run):
    from imagenet_suite.scoring.metrics.ood_detector_stats import DetectorStats
    from imagenet_suite.scoring.metrics.ood_detectors import detector_scores

    outputs, stats = photo_run["outputs"], DetectorStats.load(photo_run["stats"])
    features, logits = outputs["features"].double(), outputs["logits"].double()
    torch.testing.assert_close(features.norm(dim=1), torch.ones(6, dtype=torch.float64))  # the normalised embedding
    text = stats.class_means  # [1000, d]: the class text embeddings, unit rows
    torch.testing.assert_close(logits, 100 * features @ text.T, rtol=1e-5, atol=1e-4)  # logits = W h, W = 100 t
    torch.testing.assert_close(stats.weight, 100 * text)
    # MCM (Ming et al. 2022; NINCO: T = 1): the largest softmax of the cosines, i.e. of logits / 100
    mcm = torch.softmax(logits / 100, dim=1).max(dim=1).values
    got = detector_scores("rcos", outputs["logits"], features=outputs["features"], stats=stats)
    torch.testing.assert_close(got.double(), mcm, rtol=1e-5, atol=1e-7)
    cosine = detector_scores("cosine", outputs["logits"], features=outputs["features"], stats=stats)
    torch.testing.assert_close(cosine.double(), (logits / 100).max(dim=1).values, rtol=1e-5, atol=1e-6)


def test_hesse2025_outputs_are_the_softmax_of_the_logits(world, photo_run, tmp_path):
    # Beyond Accuracy's CLIP wrappers return softmax(100·cos); the scorer's softmax then applies to those
    predict(world, tmp_path / "o.pt", "--prompts", "photo", "--probabilities", "hesse2025")
    outputs = torch.load(tmp_path / "o.pt")
    torch.testing.assert_close(outputs["logits"], torch.softmax(photo_run["outputs"]["logits"], dim=1))
    assert outputs["zero_shot"]["probabilities"] == "hesse2025"
    assert "softmaxes again" in outputs["zero_shot"]["probability_convention"]


def test_text_embeddings_are_cached_checked_and_outputs_are_byte_identical(world, tmp_path, monkeypatch, caplog):
    from imagenet_suite.inference import zero_shot

    monkeypatch.setenv("IMAGENET_SUITE_ZERO_SHOT_CACHE", str(tmp_path / "cache"))
    cold = predict(world, tmp_path / "cold.pt", "--prompts", "photo")
    assert cold.returncode == 0
    (cached,) = (tmp_path / "cache").glob("*.pt")
    encoded = []
    real = zero_shot.encode_prompts
    monkeypatch.setattr(zero_shot, "encode_prompts", lambda *a: encoded.append(1) or real(*a))
    predict(world, tmp_path / "warm.pt", "--prompts", "photo")
    assert encoded == []  # read from the cache
    assert (tmp_path / "warm.pt").read_bytes() == (tmp_path / "cold.pt").read_bytes()
    entry = torch.load(cached)
    entry["embeddings"][0, 0] += 1e-3  # a changed value: its sha256 no longer matches
    torch.save(entry, cached)
    with caplog.at_level(logging.WARNING):
        predict(world, tmp_path / "again.pt", "--prompts", "photo")
    assert encoded == [1] and "sha256 does not match its embeddings (corrupt); computing it again" in caplog.text
    assert (tmp_path / "again.pt").read_bytes() == (tmp_path / "cold.pt").read_bytes()


def test_openai80_and_taxonomy_prompts():
    from imagenet_suite.inference.zero_shot import class_names, parse_prompts, prompt_texts

    names = class_names("clip")
    ours = prompt_texts(parse_prompts("openai80"), names)
    assert ours == [tuple(template(name) for template in open_clip.OPENAI_IMAGENET_TEMPLATES) for name in names]
    lemmas = class_names("wordnet")
    taxonomy = prompt_texts(parse_prompts("taxonomy:3"), lemmas)
    assert len(taxonomy) == 1000 and all(len(row) == 1 for row in taxonomy)
    assert taxonomy[251] == (
        "dalmatian, which is a type of dog, which is a type of canine, which is a type of carnivore",
    )
    assert all(row[0].startswith(name + ", which is a type of ") for row, name in zip(taxonomy, lemmas))
    assert not any("physical entity" in row[0] for row in taxonomy)  # the root is never an ancestor


def test_run_folder_of_another_head_is_refused(world, tmp_path):
    from imagenet_suite.errors import RunFolderError
    from imagenet_suite.inference import load_model
    from imagenet_suite.inference.run_folder import RUN_MANIFEST, check_run_folder, run_manifest
    from imagenet_suite.inference.zero_shot import ZeroShotOptions

    def manifest(prompts: str) -> dict:
        options = ZeroShotOptions(prompts=prompts, progress=False)
        return run_manifest(load_model(f"open_clip:{ARCH}", world["weights"], zero_shot_options=options))

    photo = manifest("photo")
    (tmp_path / RUN_MANIFEST).write_text(json.dumps(photo))
    check_run_folder(tmp_path, manifest("photo"), [])  # the same head
    with pytest.raises(
        RunFolderError,
        match=r"zero-shot head clip names, photo prompts \(\w+\), softmax there, clip names, file prompts",
    ):
        check_run_folder(tmp_path, manifest(str(world["root"] / "templates.txt")), [])


@pytest.mark.parametrize(
    "extra, expect",
    [
        (["--prompts", "a-missing-file.txt"], r"--prompts 'a-missing-file.txt' is not one of openai80, photo"),
        (["--prompts", "taxonomy:0"], r"--prompts 'taxonomy:0': the depth must be a whole number ≥ 1"),
        (["--prompts", "{bad}"], r"prompts file .*bad.txt line 2: 'a {c} photo' must hold exactly one \{\}"),
        (["--logit-scale", "-1"], r"--logit-scale must be a number > 0 or 'model', got -1.0"),
        (
            ["--model", "open_clip:ViT-B-16.nope"],
            r"open_clip has no pretrained tag 'nope' for ViT-B-16 \(valid: openai,",
        ),
        (["--model", "open_clip:ViT-B-61"], r"open_clip has no model 'ViT-B-61' \(similar: \['ViT-B-16'"),
        (["--model", "open_clip:ViT-B-16", "--weights", None], r"open_clip has no default weights; name a pretrained"),
        (
            ["--model", "timm:test_resnet", "--class-names", "wordnet"],
            r"--class-names applies to open_clip: models only",
        ),
    ],
)
def test_bad_inputs_are_one_line_errors(world, tmp_path, extra, expect):
    import re

    (tmp_path / "bad.txt").write_text("a photo of a {}\na {c} photo\n")
    extra = [str(tmp_path / "bad.txt") if value == "{bad}" else value for value in extra]
    args = ["predict", str(world["val"].path), "--out", str(tmp_path / "o.pt"), "--device", "cpu", "--no-progress"]
    if "--model" not in extra:
        args += ["--model", f"open_clip:{ARCH}"]
    if "--weights" in extra:
        extra = extra[: extra.index("--weights")]
    else:
        args += ["--weights", str(world["weights"])]
    result = run_cli(*args, *extra, check=False)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert re.search(expect, lines[0]), lines[0]


@pytest.mark.skipif(
    __import__("importlib").util.find_spec("transformers") is not None, reason="transformers is installed"
)
def test_a_tokenizer_that_needs_transformers_is_one_line(world, tmp_path):
    result = run_cli(
        "predict", str(world["val"].path), "--model", "open_clip:ViT-B-16-SigLIP", "--weights", "none",
        "--out", str(tmp_path / "o.pt"), "--device", "cpu", check=False,
    )  # fmt: skip
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "open_clip's tokenizer for ViT-B-16-SigLIP cannot be made (ModuleNotFoundError" in result.stderr


def test_gpu_decode_path_and_resize_only_preprocessing_on_the_cpu(world, photo_run, tmp_path):
    from imagenet_suite.inference import load_model
    from imagenet_suite.inference.models import resize_only_transform
    from imagenet_suite.inference.zero_shot import ZeroShotOptions

    predict(world, tmp_path / "o.pt", "--prompts", "photo", "--gpu-decode")  # torchvision's CPU decoder
    logits = torch.load(tmp_path / "o.pt")["logits"]
    ratio = float((logits - photo_run["outputs"]["logits"]).abs().max() / photo_run["outputs"]["logits"].std())
    assert ratio < 0.05, ratio  # inputs within a level of the PIL path's
    loaded = load_model(f"open_clip:{ARCH}", "none", zero_shot_options=ZeroShotOptions(prompts="photo", progress=False))
    squash = resize_only_transform(loaded)
    assert [type(step).__name__ for step in squash.transforms] == [
        "Resize",
        "MaybeConvertMode",
        "MaybeToTensor",
        "Normalize",
    ]
    assert squash.transforms[0].size == (32, 32) and squash(Image.new("RGB", (50, 20))).shape == (3, 32, 32)


def test_a_sweep_gives_each_open_clip_model_the_head_of_its_flags(world, tmp_path):
    """``evaluate --models ... --prompts photo``: the sweep's open_clip model gets that head (its outputs equal
    ``predict --prompts photo``'s), and the same sweep with other prompts is not taken as done."""
    from tests.helpers import run_cli as cli

    zoo = tmp_path / "zoo.txt"
    zoo.write_text(f"open_clip:{ARCH} weights={world['weights']}\n")
    common = ["evaluate", "--models", str(zoo), "--datasets", str(world["val"].path), "--device", "cpu"]
    common += ["--workers", "0", "--no-progress", "--batch-size", "4", "--protocol", "hesse2025"]
    cli(*common, "--out", str(tmp_path / "sweep"), "--prompts", "photo")
    (run,) = [path for path in (tmp_path / "sweep").iterdir() if path.name.startswith("open_clip+")]
    (outputs,) = (run / "outputs").glob("imagenet_val*.pt")
    predicted = tmp_path / "photo.pt"
    predict(world, predicted, "--prompts", "photo")
    swept, alone = torch.load(outputs), torch.load(predicted)
    assert swept["zero_shot"]["prompts"] == alone["zero_shot"]["prompts"] == "photo"
    torch.testing.assert_close(swept["logits"], alone["logits"], rtol=0, atol=0)
    again = cli(
        *common, "--out", str(tmp_path / "sweep"), "--prompts", str(world["root"] / "templates.txt"), check=False
    )
    assert "done before" not in again.stderr
    assert again.returncode != 0 and "another" in again.stderr.lower()  # the run folder of the photo head is refused
