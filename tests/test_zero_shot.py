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
    common += ["--workers", "0", "--no-progress", "--batch-size", "4", "--protocol", "hesse2025", "--bootstrap", "0"]
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


# -- prompts against the text encoder's context, and the bounds of a prompts file (issue #40, probes 4 and 7) --

LONG = "a photo of a " + "very " * 100 + "nice {}."  # probe 4: its class name lies past CLIP's 77 tokens


@pytest.fixture
def no_model(monkeypatch):
    """Building the open_clip model fails the test: a refusal must come before it (and so before any image)."""
    from imagenet_suite.inference import zero_shot

    def refuse(*args, **kwargs):
        raise AssertionError("the model was built before the prompts were refused")

    monkeypatch.setattr(zero_shot, "create_clip", refuse)


def assert_one_line(result, expect: str) -> None:
    import re

    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert re.search(expect, lines[0]), lines[0]


@pytest.mark.parametrize("command", ["predict", "evaluate"])
def test_a_template_whose_class_name_is_past_the_context_is_refused_before_the_model_is_built(
    world, tmp_path, no_model, command
):
    """Probe 4: open_clip cut such a prompt to its context, so every class got the same text (1000 equal
    logits in every row, exit 0). The tiny model's context is 24 tokens."""
    prompts = tmp_path / "long.txt"
    prompts.write_text("a photo of a {}.\n\n" + LONG + "\n")
    common = ["--model", f"open_clip:{ARCH}", "--weights", str(world["weights"]), "--device", "cpu"]
    common += ["--prompts", str(prompts), "--no-progress"]
    if command == "predict":
        result = run_cli("predict", str(world["val"].path), "--out", str(tmp_path / "o.pt"), *common, check=False)
    else:
        result = run_cli("evaluate", "--datasets", str(world["val"].path), "--out", str(tmp_path / "run"), *common,
                         check=False)  # fmt: skip
    assert_one_line(
        result,
        rf"prompts file {prompts} line 3: the class name falls beyond the 24-token context of open_clip:{ARCH}'s "
        r"text encoder: 'a photo of a very very very .* … .*\.' is 1\d\d tokens and keeps its class name "
        r"only in its first 1\d\d \(<start> and <end> included\), so open_clip would cut the name off",
    )
    assert not (tmp_path / "o.pt").exists() and not (tmp_path / "run").exists()


def test_a_sweep_refuses_the_template_for_its_open_clip_model_before_building_it(world, tmp_path, no_model):
    prompts = tmp_path / "long.txt"
    prompts.write_text(LONG + "\n")
    zoo = tmp_path / "zoo.txt"
    zoo.write_text(f"open_clip:{ARCH} weights={world['weights']}\n")
    result = run_cli(
        "evaluate", "--models", str(zoo), "--datasets", str(world["val"].path), "--out", str(tmp_path / "sweep"),
        "--device", "cpu", "--no-progress", "--prompts", str(prompts), check=False,
    )  # fmt: skip
    assert result.returncode == 1, result.stderr  # a sweep records a model that fails and goes on with the others
    assert f"prompts file {prompts} line 1: the class name falls beyond the 24-token context" in result.stderr


def test_the_probe_template_against_clips_77_token_context():
    """With CLIP's own tokenizer (its BPE ships with open_clip): the probe's template gives every class the
    same 77 tokens, and is refused; CLIP's 80 templates fit for every class name."""
    from imagenet_suite.errors import ConfigError
    from imagenet_suite.inference.zero_shot import Prompts, check_context, class_names, parse_prompts

    tokenizer = open_clip.get_tokenizer("ViT-B-32")
    names = class_names("clip")
    tokens = tokenizer([LONG.format(name) for name in names])
    assert tokens.shape == (1000, 77) and bool((tokens == tokens[0]).all())  # the defect: one text for all
    long = Prompts("file", templates=(LONG,), text="file:long.txt", lines=(1,))
    with pytest.raises(ConfigError, match=r"^prompts file long.txt line 1: .* 77-token context of m's text encoder: "):
        check_context(tokenizer, long, names, "m")
    assert check_context(tokenizer, parse_prompts("openai80"), names, "m") == []


def test_the_context_check_agrees_with_every_filled_prompt(caplog):
    """For templates on both sides of a 16-token context, the check (which fills a template with every name
    only near the context) refuses exactly when some class's prompt keeps its name past the context, and warns
    exactly when some prompt is cut after it, as tokenising all 1000 prompts says."""
    from open_clip.tokenizer import SimpleTokenizer

    from imagenet_suite.errors import ConfigError
    from imagenet_suite.inference.zero_shot import Prompts, check_context, class_names

    tokenizer = SimpleTokenizer(context_length=16)
    names = class_names("clip")
    encode = lambda text: len(tokenizer.encode(text)) + 2  # noqa: E731 (what open_clip's call sees)
    templates = ["a {}.", "{}, " + "very " * 6 + "nice.", "{}, " + "very " * 9 + "nice."]
    templates += ["a " + "very " * k + "nice {}." for k in (3, 6, 7, 8, 9, 12)]
    for template in templates:
        before, after = template.split("{}")
        refused = any(encode(before + name) > 16 for name in names)
        cut = any(encode(before + name + after) > 16 for name in names)
        prompts = Prompts("file", templates=(template,), text="file:t.txt", lines=(1,))
        try:
            warnings = check_context(tokenizer, prompts, names, "m")
        except ConfigError:
            assert refused, template
            continue
        assert not refused and bool(warnings) == cut, template
    assert {refused for refused in (any(encode(t.split("{}")[0] + n) > 16 for n in names) for t in templates)} == {
        True,
        False,
    }  # both outcomes were tried


def test_a_template_cut_only_after_the_class_name_is_a_warning_and_open_clips_cut(world, tmp_path, caplog):
    templates = ("a photo of a {}.", "a photo of a {}, " + "very " * 30 + "nice.")
    prompts = tmp_path / "tail.txt"
    prompts.write_text("\n".join(templates) + "\n")
    with caplog.at_level(logging.WARNING):
        predict(world, tmp_path / "o.pt", "--prompts", str(prompts))
    warnings = [record.getMessage() for record in caplog.records if record.levelno == logging.WARNING]
    assert len(warnings) == 1 and warnings[0].startswith(f"prompts file {prompts} line 2: 'a photo of a "), warnings
    assert "tokens, more than the 24-token context of" in warnings[0] and "(the class name is kept)" in warnings[0]
    assert_open_clip_logits(torch.load(tmp_path / "o.pt"), open_clip_logits(world, templates))  # cut as open_clip


@pytest.mark.parametrize(
    "content, expect",
    [
        (  # probe 7: 20,000 templates (600 KB) grew to 21.6 GB
            "".join(f"a photo number {k} of the {{}}.\n" for k in range(20_000)).encode(),
            r"prompts file .*many.txt is 628,890 bytes, more than a prompts file may hold \(at most 65,536 bytes, "
            r"1,000 templates of at most 1,000 characters; CLIP's 80 ImageNet templates are 2.6 KB\)$",
        ),
        (
            "".join(f"a {k} {{}}\n" for k in range(1001)).encode(),
            r"prompts file .*many.txt line 1001: more than 1,000 templates \(at most 65,536 bytes",
        ),
        (  # probe 7: one 100 KB template took 140 s
            ("a " + "x" * 100_000 + " {}\n").encode(),
            r"prompts file .*many.txt is 100,006 bytes, more than a prompts file may hold",
        ),
        (
            ("a {}\n" + "a " + "x" * 1_500 + " {}\n").encode(),
            r"prompts file .*many.txt line 2: a template of 1,505 characters, more than 1,000 \(at most 65,536 bytes",
        ),
        (
            b"a {}\nb\xe9 {}\n",
            r"prompts file .*many.txt:2: byte 0xe9 at column 2 is not UTF-8; expected prompt templates, one per line",
        ),
    ],
    ids=["20000 templates", "1001 templates", "100 KB template", "1500-character template", "not UTF-8"],
)
def test_a_prompts_file_past_its_bounds_is_refused_in_seconds_before_the_model_loads(
    world, tmp_path, monkeypatch, content, expect
):
    import time

    from imagenet_suite.inference import zero_shot

    def refuse(*args, **kwargs):
        raise AssertionError("the tokenizer or the model was made before the prompts file was refused")

    monkeypatch.setattr(zero_shot, "tokenizer_of", refuse)
    (tmp_path / "many.txt").write_bytes(content)
    started = time.monotonic()
    result = predict(world, tmp_path / "o.pt", "--prompts", str(tmp_path / "many.txt"), check=False)
    assert time.monotonic() - started < 5
    assert_one_line(result, expect)


def test_many_templates_are_encoded_a_batch_at_a_time_and_averaged_as_open_clip_does(world, tmp_path):
    """The text tower never gets more than ``text_batch_size`` prompts, whole classes or parts of one, and the
    class embeddings are open_clip's ``build_zero_shot_classifier``'s (memory does not grow with templates)."""
    from imagenet_suite.inference import load_model
    from imagenet_suite.inference.zero_shot import ClassPrompts, ZeroShotOptions, class_names, encode_prompts

    templates = tuple(f"a photo number {k} of the {{}}." for k in range(7))
    (tmp_path / "seven.txt").write_text("\n".join(templates) + "\n")
    clip = load_model(f"open_clip:{ARCH}", world["weights"], zero_shot_options=ZeroShotOptions("photo", progress=False))
    clip = clip.model.clip
    tokenizer = open_clip.get_tokenizer(ARCH)
    names = class_names("clip")[:5]
    expected = open_clip.build_zero_shot_classifier(clip, tokenizer, names, templates, num_classes_per_batch=5).T
    real, sizes = clip.encode_text, []

    def recorded(tokens, normalize=False):
        sizes.append(len(tokens))
        return real(tokens, normalize=normalize)

    clip.encode_text = recorded
    for batch, parts in ((3, [3, 3, 1] * 5), (14, [14, 14, 7]), (1024, [35])):
        options = ZeroShotOptions(str(tmp_path / "seven.txt"), text_batch_size=batch, progress=False)
        sizes.clear()
        got = encode_prompts(clip, tokenizer, ClassPrompts(options.parsed, names), options)
        assert sizes == parts
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6)


def test_class_prompts_are_made_row_by_row_with_the_recorded_sha256():
    """The prompts of a head are made when encoded, and their sha256 (written row by row) is the one run
    folders and text-embedding caches recorded before: ``json.dumps`` of the whole list."""
    import hashlib

    from imagenet_suite.inference.zero_shot import ClassPrompts, Prompts, class_names, parse_prompts, prompts_digest

    rows = ClassPrompts(parse_prompts("openai80"), class_names("clip"))
    assert len(rows) == 1000 and rows.per_class == 80 and rows[-1][0] == "a bad photo of a toilet paper."
    for prompts in (rows, ClassPrompts(Prompts("file", templates=("une photo d'un {} — très belle.",)), ["tench"])):
        whole = json.dumps([list(row) for row in prompts], ensure_ascii=False)  # the second is not ASCII
        assert prompts_digest(prompts) == hashlib.sha256(whole.encode()).hexdigest()


def test_a_tokenizer_that_drops_tokens_of_its_choice_gets_no_prompt_past_its_context():
    """CLIPA's tokenizers shorten a long text by a reduction mask (random or syntax-chosen tokens), which may
    drop the class name wherever it is: a prompt past the context is refused even with the name first."""
    from open_clip.tokenizer import SimpleTokenizer

    from imagenet_suite.errors import ConfigError
    from imagenet_suite.inference.zero_shot import Prompts, check_context

    reduced = SimpleTokenizer(context_length=10, reduction_mask="simple")
    long = Prompts("file", templates=("{}, a very very very very nice one.",), text="file:t.txt", lines=(1,))
    with pytest.raises(ConfigError, match=r"^prompts file t.txt line 1: 'tench, a very .*' is 13 tokens, more than the "
                       r"10-token context of m's text encoder, whose tokenizer drops tokens of its own choice"):  # fmt: skip
        check_context(reduced, long, ["tench"], "m")
    assert len(check_context(SimpleTokenizer(context_length=10), long, ["tench"], "m")) == 1  # cut at the end: kept
    assert check_context(reduced, Prompts("photo", text="photo"), ["tench"], "m") == []
