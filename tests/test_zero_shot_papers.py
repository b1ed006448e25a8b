"""A zero-shot model's numbers under each paper's convention (issue 35, item 6), through ``evaluate`` and
``leaderboard``.

* Beyond Accuracy (Hesse et al. 2025) scores its vision-language models with its wrappers' output,
  ``softmax(100·cos)``, softmaxed again by every metric. A run with ``--probabilities softmax`` (logits)
  scores the QUBA inputs that depend on the probabilities again on that output, computed from its stored
  logits: the same rows as a run whose head returns it (``--probabilities hesse2025``).
* LCA-on-the-Line (Shi et al. 2024) classifies ObjectNet with a zero-shot model among ObjectNet's 113 class
  names (``prepare_logit/extract_openclip_feature.py``: "a photo of a {c}" for the lowercased labels of the
  sorted class folders, ``100 * image_features @ text_features.T``, top-1 and top-5 of those 113 logits):
  ``objectnet@objectnet113`` holds exactly that, written out here with open_clip itself.

The model is the tiny random-init open_clip architecture of tests/test_zero_shot.py; the datasets are
fixture builds of ImageNet val, two shape-bias sets and ObjectNet.
"""

from __future__ import annotations

import io
import json

import pytest
import torch
from PIL import Image

from imagenet_suite.core.options import BuildOptions
from imagenet_suite.core.runner import build_dataset
from imagenet_suite.dataset.folder import DatasetFolder
from tests.fixtures import variants as variants_fx
from tests.test_evaluate import _shape_bias_manual
from tests.test_zero_shot import ARCH, _cache, shared_cache, world  # noqa: F401 (fixtures)

open_clip = pytest.importorskip("open_clip")

WRAPPER = "@hesse2025_probabilities"
OBJECTNET_FOLDERS = ("alarm_clock", "banana", "binder_closed", "chair")  # binder: a label that is not its folder


@pytest.fixture(scope="module")
def runs(request, tmp_path_factory):
    """The tiny model evaluated with each probability convention on ImageNet val, cue-conflict, sketch and
    ObjectNet, with FGSM/PGD on four val images: ``{"softmax": suite, "hesse2025": suite, ...}``."""
    from imagenet_suite.inference import PredictOptions, load_model
    from imagenet_suite.inference.evaluate import run_suite
    from imagenet_suite.inference.suite_options import SuiteOptions
    from imagenet_suite.inference.zero_shot import ZeroShotOptions

    clip, cache = request.getfixturevalue("world"), request.getfixturevalue("shared_cache")
    root = tmp_path_factory.mktemp("zero_shot_papers")
    shapes = build_dataset(
        "shape_bias_sets", root / "shape_bias_sets", ["cue_conflict", "sketch"],
        options=BuildOptions(manual_dir=_shape_bias_manual(root / "mvh"), offline=True,
                             builder_options={"strict_counts": False}, progress=False),
    )  # fmt: skip
    manual = variants_fx.write_objectnet(root / "objectnet-src", variants_fx.objectnet_images(OBJECTNET_FOLDERS))
    objectnet = variants_fx.build("objectnet", manual, root / "objectnet")
    datasets = [clip["val"].path, shapes, objectnet]
    found = {"root": root, "objectnet": DatasetFolder(objectnet), "weights": clip["weights"]}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("IMAGENET_SUITE_ZERO_SHOT_CACHE", str(cache))
        for probabilities in ("softmax", "hesse2025"):
            head = ZeroShotOptions(prompts="photo", probabilities=probabilities, progress=False)
            loaded = load_model(f"open_clip:{ARCH}", clip["weights"], zero_shot_options=head)
            options = SuiteOptions(
                predict=PredictOptions(batch_size=4, workers=0, progress=False), adversarial=4, bootstrap=0
            )
            found[probabilities] = run_suite(loaded, datasets, root / probabilities, options)
    return found


def rows(report: dict) -> dict[tuple[str, str, str], float]:
    return {(r["metric"], r.get("variant", ""), r.get("subgroup", "")): r["value"] for r in report["metrics"]}


def assert_same_rows(got: dict, want: dict) -> None:
    got, want = rows(got), rows(want)
    assert got.keys() == want.keys()
    for key, value in want.items():
        assert (got[key] is None) == (value is None), key
        if value is not None:
            assert got[key] == pytest.approx(value, rel=1e-5, abs=1e-6), key


def test_beyond_accuracys_inputs_are_recomputed_from_the_logits_as_its_wrappers_give_them(runs):
    logits, wrapped = runs["softmax"], runs["hesse2025"]
    for key in ("imagenet_val", "shape_bias_sets/cue_conflict", "shape_bias_sets/sketch"):
        recomputed = logits["datasets"][key + WRAPPER]
        assert recomputed["meta"]["probabilities"].startswith("Beyond Accuracy's wrapper output of the stored logits")
        # the rows of a head returning softmax(100·cos), predicted: the same as recomputed from the logits
        assert_same_rows(recomputed, wrapped["datasets"][key])
    assert not any(key.endswith(WRAPPER) for key in wrapped["datasets"])  # its outputs are the wrapper's already
    # single and double softmax give other calibration errors: the recomputation is not a no-op
    single, double = rows(logits["datasets"]["imagenet_val"]), rows(logits["datasets"]["imagenet_val" + WRAPPER])
    error = next(key for key in single if key[0] == "calibration_error" and not key[2])
    assert single[error] != pytest.approx(double[error])
    quba, paper = logits["summary"]["quba"], wrapped["summary"]["quba"]
    for dimension in ("calibration_error", "class_balance"):
        assert quba["dimensions"][dimension]["value"] == pytest.approx(paper["dimensions"][dimension]["value"])
    assert quba["dimensions"]["calibration_error"]["value"] == double[error] != single[error]  # read in its place
    assert quba["probabilities"] == "hesse2025, recomputed from the logits"
    assert paper["probabilities"] == "hesse2025, the run's outputs"
    # the attacks of the logits run attacked the logits, not the wrapper's output: no adversarial dimension
    assert quba["missing"]["adversarial_robustness"].startswith("a zero-shot model's FGSM and PGD attacked its logits")
    assert logits["summary"]["adversarial"]["rows"] == 4  # the attacks ran, on the logits
    # the wrapper's run attacked the wrapper's output: its dimension is the paper's (here undefined: the random
    # model is right on none of the attacked images)
    assert paper["missing"]["adversarial_robustness"] == "undefined: its normalising accuracy is 0"
    # every other number reads the run's own outputs: the recomputed reports are no datasets of their own
    assert not any(key.endswith(WRAPPER) for key in logits["summary"]["accuracies"])
    assert logits["zero_shot"]["probabilities"] == "softmax" and wrapped["zero_shot"]["probabilities"] == "hesse2025"


def test_objectnet_is_classified_among_its_113_names_as_lca_on_the_line_does(runs):
    from safetensors.torch import load_file

    from imagenet_suite.inference.zero_shot_papers import objectnet_class_name

    report = runs["softmax"]["datasets"]["objectnet@objectnet113"]
    assert report["meta"]["zero_shot_head"].startswith("ObjectNet's 113 class names")
    # LCA-on-the-Line's code, written out: "a photo of a {name}" for the 113 lowercased labels in folder order,
    # the image tower on the border-cropped image (2 px) and the model's transform, 100 * cos, top-1 / top-5
    model, _, preprocess = open_clip.create_model_and_transforms(ARCH)
    model.load_state_dict(load_file(str(runs["weights"])))
    model.eval()
    folder = runs["objectnet"]
    names = folder.config_info("imagenet_overlap")["features"]["objectnet_label"]["names"]
    assert len(names) == 113 and objectnet_class_name("binder_closed") == "binder (closed)"
    tokenizer = open_clip.get_tokenizer(ARCH)
    table = folder.read_table("imagenet_overlap", "test", ["id", "image", "objectnet_label"])
    hand = {}
    with torch.no_grad():
        text = model.encode_text(tokenizer([f"a photo of a {objectnet_class_name(n)}" for n in names]))
        text = text / text.norm(dim=-1, keepdim=True)
        hits1 = hits5 = 0
        for row_id, image, label in zip(*(table.column(c).to_pylist() for c in ("id", "image", "objectnet_label"))):
            pil = Image.open(io.BytesIO(image["bytes"])).convert("RGB")
            pil = pil.crop((2, 2, pil.width - 2, pil.height - 2))
            features = model.encode_image(preprocess(pil)[None])
            features = features / features.norm(dim=-1, keepdim=True)
            hand[row_id] = (100.0 * features @ text.T)[0]
            top = hand[row_id].topk(5).indices.tolist()
            hits1, hits5 = hits1 + (top[0] == label), hits5 + (label in top)
    values = rows(report)
    assert values[("top1_accuracy", "class_mapping:max", "")] == hits1 / len(table)
    assert values[("top5_accuracy", "class_mapping:max", "")] == hits5 / len(table)
    # the outputs themselves: every ImageNet column of ObjectNet class k holds its logit k, the others less
    outputs = torch.load(runs["root"] / "softmax" / "outputs" / "objectnet@objectnet113.pt")
    want = torch.stack([hand[row_id] for row_id in outputs["ids"]])
    assert float(want.std(dim=0).mean()) > 0.1  # the images give different logits: the comparison can fail
    mapping = folder.protocol("imagenet_overlap")["class_mapping"]
    for k, name in enumerate(names):
        for column in mapping[name]:
            torch.testing.assert_close(outputs["logits"][:, column], want[:, k], rtol=1e-5, atol=1e-4)
    unmapped = sorted(set(range(1000)) - {c for columns in mapping.values() for c in columns})
    assert bool((outputs["logits"][:, unmapped] < want.min()).all())
    # the 1000-way head through the class mapping stays under its own key
    assert "zero_shot_head" not in runs["softmax"]["datasets"]["objectnet"]["meta"]
    assert {"objectnet", "objectnet@objectnet113"} <= set(runs["softmax"]["summary"]["accuracies"])


def test_the_leaderboard_names_each_convention(runs, tmp_path, capsys):
    from imagenet_suite import cli
    from imagenet_suite.scoring.summary.leaderboard import leaderboard, load_suites

    root = runs["root"]
    board = leaderboard(load_suites([root / "softmax", root / "hesse2025"]))
    assert board.quba["probabilities"].to_dict() == {
        f"open_clip:{ARCH} (softmax)": "hesse2025, recomputed from the logits",
        f"open_clip:{ARCH} (hesse2025)": "hesse2025, the run's outputs",
    }
    assert cli.main(["leaderboard", str(root / "softmax"), str(root / "hesse2025"), "--out", str(tmp_path)]) == 0
    capsys.readouterr()
    text = (tmp_path / "leaderboard.md").read_text()
    assert "`probabilities`: a zero-shot model's dimensions follow Beyond Accuracy's wrappers" in text
    suite_md = (root / "softmax" / "suite.md").read_text()
    assert "A zero-shot model: probabilities hesse2025, recomputed from the logits" in suite_md
    assert json.loads((root / "softmax" / "suite.json").read_text())["zero_shot"]["prompts"] == "photo"


def test_lca_on_the_line_reads_a_zero_shot_models_113_way_objectnet_and_keeps_the_mapped_one_apart(tmp_path):
    from imagenet_suite.scoring.summary.leaderboard import leaderboard
    from imagenet_suite.scoring.summary.papers.shi2024 import MAPPED_HEAD
    from tests.test_read_runs import build, suite_json
    from tests.test_read_runs import report as plain_report

    objectnet = build("c" * 64, "objectnet", "imagenet_overlap", "test")

    def suite(name: str, mapped: float, twin: float | None) -> dict:
        reports = {"objectnet": plain_report("objectnet", mapped, objectnet)}
        if twin is not None:
            reports["objectnet@objectnet113"] = plain_report("objectnet", twin, objectnet)
            reports["objectnet@objectnet113"]["meta"]["zero_shot_head"] = "ObjectNet's 113 class names"
        return suite_json(name, 0.5, **reports)

    suites = {"vm1": suite("vm1", 0.25, None), "vm2": suite("vm2", 0.5, None), "vlm": suite("vlm", 0.125, 0.75)}
    inputs = leaderboard(suites).on_the_line.inputs.set_index(["model", "ood_dataset"])
    # the paper's row: the vision models' mapped accuracy, the zero-shot model's 113-way one
    assert inputs.loc[("vlm", "objectnet"), "ood_top1"] == 0.75 and inputs.loc[("vm2", "objectnet"), "ood_top1"] == 0.5
    assert inputs.loc[("vlm", "objectnet"), "zero_shot_head"] == "113-way: ObjectNet's class names"
    # beside it, every model through the 1000-way head and the mapping
    assert inputs.loc[("vlm", "objectnet" + MAPPED_HEAD), "ood_top1"] == 0.125
    assert inputs.loc[("vm1", "objectnet" + MAPPED_HEAD), "ood_top1"] == 0.25
    assert "objectnet@objectnet113" not in set(inputs.index.get_level_values("ood_dataset"))
