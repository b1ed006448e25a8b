"""``ood fit-stats`` on a train fixture: every statistic equals numpy/sklearn on the same features (predict's,
read back), the chunked two-pass fit equals the in-memory one, the file (format 3) is deterministic and
records its provenance and a content hash (a file changed by one byte is refused by every reader: issue 40,
probe 2), and evaluate / review refuse statistics of another model.

The model is a tiny user model (a file callable, random init, 8-d features, 3 classes) over an
``imagenet_train`` build of 15 images of classes 0..2, so every class has rows. The ``openood_v15`` preset's
val set is an ``imagenet_val`` build of 8 images and its OpenOOD ID split a ``popular_ood`` ``openood_id_split``
build (every 4th id in ``val``).
"""

from __future__ import annotations

import json
import textwrap
from dataclasses import replace

import numpy as np
import pytest
import scipy.special
import torch
from sklearn.covariance import EmpiricalCovariance

from imagenet_suite.core.options import BuildOptions
from imagenet_suite.core.runner import build_dataset
from imagenet_suite.dataset.folder import DatasetFolder
from imagenet_suite.errors import ConfigError, OutputsError
from imagenet_suite.files import sha256_file
from imagenet_suite.inference import fit_stats as fit_module
from imagenet_suite.inference.models import load_model, weights_digest
from imagenet_suite.inference.predict import PredictOptions, predict, split_units
from imagenet_suite.scoring.metrics import ood_fit
from imagenet_suite.scoring.metrics.ood_detector_fit import fit_detector_stats
from imagenet_suite.scoring.metrics.ood_detector_stats import DetectorStats
from imagenet_suite.scoring.metrics.ood_fit import FitSet
from imagenet_suite.seeding import class_stratified
from tests.fixtures import imagenet_layouts as val_fx
from tests.fixtures import imagenet_train as train_fx
from tests.fixtures import popular_ood as ood_fx
from tests.helpers import run_cli

PER_CLASS, LABELS = (6, 5, 4), (0, 1, 2)
STATS_V2 = "imagenet-suite-detector-stats/2"  # the format before the content hash, written out independently


@pytest.fixture(scope="module")
def train(tmp_path_factory):
    root = tmp_path_factory.mktemp("fit-train")
    manual = train_fx.write_folders_layout(root / "manual", train_fx.make_train_images(PER_CLASS, LABELS))
    return build_dataset("imagenet_train", root / "out", options=BuildOptions(manual_dir=manual, progress=False))


@pytest.fixture(scope="module")
def val(tmp_path_factory):
    root = tmp_path_factory.mktemp("fit-val")
    manual = val_fx.write_folders_layout(root / "manual", val_fx.make_val_images(8))
    return build_dataset("imagenet_val", root / "out", options=BuildOptions(manual_dir=manual, progress=False))


def id_split(root, val_ids):
    """A ``popular_ood`` build of OpenOOD's ID split over ``val_ids`` (every 4th in ``val``, the rest ``test``)."""
    ood_fx.write_id_split(root / "manual", val_ids)
    options = BuildOptions(manual_dir=root / "manual", builder_options={"strict_counts": False}, progress=False)
    return build_dataset("popular_ood", root / "out", ["openood_id_split"], options=options)


@pytest.fixture(scope="module")
def spec(tmp_path_factory):
    path = tmp_path_factory.mktemp("model") / "tiny.py"
    path.write_text(
        textwrap.dedent("""
        from torch import nn

        def make():
            return nn.Sequential(nn.Conv2d(3, 8, 3, stride=8), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                 nn.Linear(8, 3))
    """)
    )
    return f"{path}:make"


def fit_cli(spec, train, out, *extra, check=True):
    argv = ["ood", "fit-stats", "--model", spec, "--weights", "none", "--seed", "3", "--train", str(train)]
    run = ["--device", "cpu", "--workers", "0", "--batch-size", "4"]
    return run_cli(*argv, "--out", str(out), *run, *extra, check=check)


@pytest.fixture(scope="module")
def fitted(spec, train, tmp_path_factory):
    """The CLI's statistics file, and the model's features/logits/labels on the same rows (predict, read back)."""
    root = tmp_path_factory.mktemp("fitted")
    result = fit_cli(spec, train, root / "stats.safetensors", "--no-progress")
    assert result.stdout.strip() == str(root / "stats.safetensors")
    assert not list(root.glob("*.partial"))  # predict's batches are removed once the statistics are written
    loaded = load_model(spec, "none", seed=3)
    saved = torch.load(
        predict(train, loaded, root / "train.pt", options=PredictOptions(workers=0, features=True, progress=False)),
        weights_only=True,
    )
    table = DatasetFolder(train).read_table("default", "train", ["id", "label"])
    assert saved["ids"] == table.column("id").to_pylist()
    return {
        "path": root / "stats.safetensors",
        "stats": DetectorStats.load(root / "stats.safetensors"),
        "loaded": loaded,
        "ids": saved["ids"],
        "features": saved["features"].double().numpy(),
        "logits": saved["logits"].double().numpy(),
        "labels": np.asarray(table.column("label").to_pylist()),
    }


def close(got, expected, rtol=1e-9):
    got = got.numpy() if isinstance(got, torch.Tensor) else np.asarray(got)
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=rtol * max(1.0, float(np.abs(expected).max())))


def test_every_statistic_equals_numpy_and_sklearn_on_the_same_features(fitted):
    stats, h, logits, labels = fitted["stats"], fitted["features"], fitted["logits"], fitted["labels"]
    head = fitted["loaded"].model[-1]
    weight, bias = head.weight.detach().double().numpy(), head.bias.detach().double().numpy()
    close(stats.weight, weight, 0) and close(stats.bias, bias, 0)
    means = np.array([h[labels == c].mean(axis=0) for c in range(3)])
    close(stats.class_means, means)
    close(stats.precision, EmpiricalCovariance(assume_centered=True).fit(h - means[labels]).precision_)
    close(stats.global_mean, h.mean(axis=0))
    close(stats.global_precision, EmpiricalCovariance().fit(h).precision_)  # sklearn centres on the mean itself
    assert stats.react_threshold == np.quantile(h, 0.99)  # one scalar over every train activation, exactly
    bank = h / np.linalg.norm(h, axis=1, keepdims=True)
    assert stats.knn_bank.dtype == torch.float32 and len(stats.knn_bank) == 15  # every row: 15 < --knn-rows
    close(stats.knn_bank, bank, 1e-6)
    probs = scipy.special.softmax(logits, axis=1)
    predicted = probs.argmax(axis=1)
    templates = [probs[predicted == c].mean(axis=0) if (predicted == c).any() else np.eye(3)[c] for c in range(3)]
    close(stats.klm_templates, np.array(templates))
    u = -np.linalg.pinv(weight) @ bias  # ViM as NINCO computes it (D = d // 2 = 4 for 8-d features)
    eigenvalues, eigenvectors = np.linalg.eigh(EmpiricalCovariance(assume_centered=True).fit(h - u).covariance_)
    null_space = eigenvectors[:, np.argsort(-eigenvalues, kind="stable")[4:]]
    assert stats.vim_dim == 4
    close(stats.vim_origin, u)
    close(stats.vim_null_space @ stats.vim_null_space.T, null_space @ null_space.T, 1e-7)  # the space, not a basis
    alpha = logits.max(axis=1).mean() / np.linalg.norm((h - u) @ null_space, axis=1).mean()
    assert stats.vim_alpha == pytest.approx(alpha, rel=1e-7)


def test_the_file_records_its_provenance_and_is_byte_deterministic(fitted, spec, train, tmp_path):
    from safetensors import safe_open

    with safe_open(fitted["path"], framework="pt") as handle:
        metadata = json.loads(handle.metadata()["imagenet_suite"])
    assert metadata["format"] == "imagenet-suite-detector-stats/3"
    provenance = metadata["provenance"]
    build = json.loads((train / "build_info.json").read_text())
    assert provenance["model"] == spec and provenance["weights_sha256"] == weights_digest(fitted["loaded"])
    assert provenance["code_sha256"] == sha256_file(spec.rpartition(":")[0])  # a user model: its source file
    assert provenance["dataset"] == {
        "name": "imagenet_train",
        "version": build["version"],
        "build": build["build_info_sha256"],
        "config": "default",
        "split": "train",
    }
    assert (provenance["rows"], provenance["per_class"], provenance["seed"], provenance["knn_rows"]) == (
        15,
        None,
        3,
        15,
    )
    assert metadata["fields"]["preset"] == "ninco" and metadata["fields"]["knn_k"] == 1000
    again = tmp_path / "again.safetensors"
    fit_cli(spec, train, again, "--no-progress")
    assert again.read_bytes() == fitted["path"].read_bytes()


def test_the_chunked_fit_equals_the_in_memory_fit(fitted, spec, train, tmp_path, monkeypatch):
    """Blocks of 4 rows (3 passes' worth of chunks per pass) against one in-memory FitSet: float sums agree to
    rounding, the quantile exactly (radix select on the same float32 values)."""
    monkeypatch.setattr(fit_module, "QUERY_ELEMENTS", 4 * 8)
    run = PredictOptions(batch_size=2, workers=0, progress=False)
    options = fit_module.FitStatsOptions(run, progress=False)
    chunked = DetectorStats.load(
        fit_module.fit_stats(train, fitted["loaded"], tmp_path / "s.safetensors", options=options)
    )
    weight, bias = fit_module.last_layer(fitted["loaded"].model)
    same = torch.load(  # the same batches (a model's float32 outputs change with the batch size)
        predict(train, fitted["loaded"], tmp_path / "same.pt", options=replace(run, features=True)), weights_only=True
    )
    in_memory = fit_detector_stats(
        FitSet(same["features"], torch.from_numpy(fitted["labels"]), same["logits"]), weight=weight, bias=bias
    )
    for name in ("class_means", "precision", "global_mean", "global_precision", "klm_templates", "knn_bank"):
        close(getattr(chunked, name), getattr(in_memory, name).numpy(), 1e-10)
    assert chunked.react_threshold == in_memory.react_threshold
    assert chunked.vim_alpha == pytest.approx(in_memory.vim_alpha, rel=1e-10)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_radix_quantile_over_many_chunks_is_numpys(dtype):
    values = torch.from_numpy(np.random.default_rng(5).normal(0, 2, (101, 7))).to(dtype)
    source = ood_fit.FitChunks.of(FitSet(values), max_elements=7 * 13)  # 8 chunks
    for q in (0.0, 0.37, 1.0):
        quantile = ood_fit.RadixQuantile(q)
        ood_fit.run_passes(source, [quantile])
        assert quantile.passes == (4 if dtype == torch.float64 else 2)
        assert quantile.value == np.quantile(values.double().numpy(), q)


def test_per_class_fits_the_rows_of_the_builders_subset(fitted, spec, train, tmp_path):
    out = tmp_path / "two.safetensors"
    fit_cli(spec, train, out, "--per-class", "2", "--knn-rows", "4", "--detectors", "cosine", "knn", "--no-progress")
    stats = DetectorStats.load(out)
    by_class = {}
    for image_id in fitted["ids"]:
        by_class.setdefault(image_id.split("_")[0], []).append(image_id)
    chosen = set(class_stratified(by_class, 2, seed=3))  # what `build imagenet_train --option subset=2 --seed 3` holds
    rows = np.array([image_id in chosen for image_id in fitted["ids"]])
    h, labels = fitted["features"][rows], fitted["labels"][rows]
    close(stats.class_means, np.array([h[labels == c].mean(axis=0) for c in range(3)]))
    assert stats.precision is not None and stats.react_threshold is None  # cosine and knn only
    assert stats.provenance["rows"] == 6 and stats.provenance["per_class"] == 2 and len(stats.knn_bank) == 4
    assert "a seeded uniform sample of 4 of the 6 train features" in stats.extra["knn"]
    bank = h / np.linalg.norm(h, axis=1, keepdims=True)
    picked = ood_fit.sample_positions(6, 4, seed=3)
    close(stats.knn_bank, bank[picked], 1e-6)


def test_evaluate_and_review_refuse_statistics_of_another_model(fitted, spec, train, tmp_path):
    from imagenet_suite.inference.evaluate import run_suite
    from imagenet_suite.inference.suite_options import SuiteOptions
    from imagenet_suite.review.signals import SignalOptions, compute_signals
    from imagenet_suite.scoring.metrics.ood_detector_stats import Embeddings
    from imagenet_suite.scoring.outputs import ModelOutputs

    other = load_model(spec, "none", seed=4)  # same architecture, other weights
    options = SuiteOptions(PredictOptions(workers=0, progress=False), detector_stats=fitted["path"], bootstrap=0)
    with pytest.raises(
        ConfigError, match=r"detector_stats .*stats.safetensors: fitted for .*tiny.py:make with weights"
    ):
        run_suite(other, [train], tmp_path / "run", options)
    outputs = predict(train, other, tmp_path / "o.pt", options=PredictOptions(workers=0, features=True, progress=False))
    signals = SignalOptions(features=Embeddings.load(outputs), stats=fitted["stats"], precheck=False)
    rows = {image_id: "n01440764" for image_id in fitted["ids"]}
    with pytest.raises(ConfigError, match=r"^detector_stats: the logits are not the fitted last layer's W h \+ b"):
        compute_signals(ModelOutputs.load(outputs), rows, {}, signals)
    mine = predict(
        train, fitted["loaded"], tmp_path / "m.pt", options=PredictOptions(workers=0, features=True, progress=False)
    )
    signals = SignalOptions(features=Embeddings.load(mine), stats=fitted["stats"], precheck=False)
    assert "vim" in compute_signals(ModelOutputs.load(mine), rows, {}, signals).detectors  # its own: accepted


def test_format_1_files_still_load_and_provenance_needs_format_2(fitted, tmp_path):
    stats = fitted["stats"]
    with pytest.raises(ConfigError, match=r"stats.pt: statistics with a provenance .* give a .safetensors path"):
        stats.save(tmp_path / "stats.pt")
    stats.provenance = {}
    legacy = DetectorStats.load(stats.save(tmp_path / "stats.pt"))
    assert legacy.provenance == {} and torch.equal(legacy.precision, stats.precision)
    entries = torch.load(tmp_path / "stats.pt", weights_only=True)  # format 1 carries the content hash too
    entries["knn_k"] += 1
    torch.save(entries, tmp_path / "edited.pt")
    with pytest.raises(OutputsError, match=r"edited\.pt: content sha256 [0-9a-f]{64}, but the file records"):
        DetectorStats.load(tmp_path / "edited.pt")
    legacy.refuse_other_model("any:model", "0" * 64, "stats.pt")  # nothing recorded: nothing to refuse
    (tmp_path / "bad.safetensors").write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{not json")
    with pytest.raises(OutputsError, match=r"bad.safetensors: not a readable safetensors file"):
        DetectorStats.load(tmp_path / "bad.safetensors")


def test_statistics_of_a_user_model_whose_code_changed_are_refused(fitted, spec):
    stats, loaded = DetectorStats.load(fitted["path"]), fitted["loaded"]
    stats.refuse_other_model(spec, weights_digest(loaded), fitted["path"], loaded.code_sha256)  # its own code
    edited = "0" * 64
    with pytest.raises(ConfigError, match=r"fitted for .*tiny\.py:make with model code sha256 [0-9a-f]{12}…, but "):
        stats.refuse_other_model(spec, weights_digest(loaded), fitted["path"], edited)


def _safetensors_header(data: bytes) -> tuple[int, dict]:
    size = int.from_bytes(data[:8], "little")
    return size, json.loads(data[8 : 8 + size])


def test_a_statistics_file_changed_by_one_byte_is_refused(fitted, spec, val, tmp_path, capsys):
    """Issue 40, probe 2: one exponent byte of ``precision[0, 0]`` flipped (still a readable safetensors file
    of finite values) is refused by every reader — DetectorStats.load (evaluate, score, review, a sweep's
    ``detector_stats=``) — in one line naming the file and both hashes; ``evaluate`` exits 2 before any work."""
    from safetensors.torch import load_file

    data = bytearray(fitted["path"].read_bytes())
    size, header = _safetensors_header(data)
    begin, _ = header["precision"]["data_offsets"]
    data[8 + size + begin + 7] ^= 0x01  # float64, little-endian: byte 7 holds the sign and the exponent's top bits
    changed = tmp_path / "changed.safetensors"
    changed.write_bytes(bytes(data))
    precision = load_file(changed)["precision"]
    original = load_file(fitted["path"])["precision"]
    assert torch.isfinite(precision).all() and precision[0, 0] != original[0, 0]
    assert torch.equal(precision.flatten()[1:], original.flatten()[1:])
    recorded = json.loads(header["__metadata__"]["imagenet_suite"])["content_sha256"]
    with pytest.raises(OutputsError) as raised:
        DetectorStats.load(changed)
    message = str(raised.value)
    assert message.startswith(f"{changed}: content sha256 ") and "\n" not in message
    assert message.endswith(
        f", but the file records {recorded}: it changed since it was written; fit the statistics again (ood fit-stats)"
    )
    run = tmp_path / "run"
    argv = ["evaluate", "--model", spec, "--weights", "none", "--seed", "3", "--datasets", str(val), "--out", str(run),
            "--features", "--detector-stats", str(changed), "--workers", "0", "--batch-size", "4", "--no-progress"]  # fmt: skip
    result = run_cli(*argv, check=False)
    assert result.returncode == 2 and result.stderr.strip() == f"imagenet-suite evaluate: error: {message}"
    assert not run.exists()


def test_a_statistics_file_without_a_content_hash_is_read_with_a_warning(fitted, tmp_path, caplog):
    """A format-2 file (written before the content hash) is read as before, with one warning line saying
    that a change to it cannot be detected and how to get a checked file; a format-3 file without its hash
    is refused."""
    from safetensors.torch import load_file, save_file

    _, header = _safetensors_header(fitted["path"].read_bytes())
    metadata = json.loads(header["__metadata__"]["imagenet_suite"])
    del metadata["content_sha256"]
    older = tmp_path / "format2.safetensors"
    save_file(load_file(fitted["path"]), older, {"imagenet_suite": json.dumps({**metadata, "format": STATS_V2})})
    with caplog.at_level("WARNING"):
        stats = DetectorStats.load(older)
    assert torch.equal(stats.precision, load_file(fitted["path"])["precision"])
    assert [record.getMessage() for record in caplog.records] == [
        f"detector statistics {older}: {STATS_V2} without a content hash (written by an older imagenet-suite): a "
        "change to it since cannot be detected; fit it again (ood fit-stats) for a file checked on every read"
    ]
    stripped = tmp_path / "stripped.safetensors"
    save_file(load_file(fitted["path"]), stripped, {"imagenet_suite": json.dumps(metadata)})
    with pytest.raises(OutputsError, match=r"stripped\.safetensors: a imagenet-suite-detector-stats/3 file holds"):
        DetectorStats.load(stripped)


def test_split_units_takes_only_the_rows_asked_for(train):
    folder = DatasetFolder(train)
    units = split_units(folder, "default", "train", 4, rows=[0, 1, 2, 7, 8, 14])
    assert [unit.rows for unit in units] == [4, 2]
    assert [(p.offset, p.length) for p in units[0].pieces] == [(0, 3), (7, 1)]  # runs of consecutive rows
    with pytest.raises(ConfigError, match=r"^rows must be row positions in ascending order"):
        split_units(folder, "default", "train", 4, rows=[3, 1])
    with pytest.raises(ConfigError, match=r"^rows: position 15 is past the split's 15 rows"):
        split_units(folder, "default", "train", 4, rows=[15])


def val_outputs(spec, val, tmp_path):
    """The tiny model's features and logits (float64) of every val row, by id (predict, read back)."""
    loaded = load_model(spec, "none", seed=3)
    options = PredictOptions(workers=0, features=True, progress=False)
    saved = torch.load(predict(val, loaded, tmp_path / "val.pt", options=options), weights_only=True)
    return saved["ids"], saved["features"].double().numpy(), saved["logits"].double().numpy()


def test_openood_v15_fits_react_and_klm_on_the_split_val_rows(spec, train, val, tmp_path):
    ids, h, logits = val_outputs(spec, val, tmp_path)
    split = id_split(tmp_path / "split", ids)
    out = tmp_path / "openood.safetensors"
    flags = ["--preset", "openood_v15", "--val", str(val), "--val-split-from", str(split), "--no-progress"]
    result = fit_cli(spec, train, out, *flags, "--detectors", "react_energy", "kl_matching", "cosine")
    assert result.stderr == ""  # nothing left out: no note
    stats = DetectorStats.load(out)
    chosen = np.array([k % 4 == 3 for k in range(len(ids))])  # OpenOOD's val ids, as write_id_split lists them
    assert stats.react_threshold == np.percentile(h[chosen].flatten(), 90)  # OpenOOD's ReactPostprocessor.setup
    probs = scipy.special.softmax(logits[chosen], axis=1)
    predicted = probs.argmax(axis=1)
    templates = [probs[predicted == c].mean(axis=0) if (predicted == c).any() else np.eye(3)[c] for c in range(3)]
    close(stats.klm_templates, np.array(templates))
    assert "val activations" in stats.extra["react_energy"] and stats.extra["kl_matching"].startswith("val softmax")
    val_build = json.loads((val / "build_info.json").read_text())
    split_build = json.loads((split / "build_info.json").read_text())
    assert stats.provenance["val"] == {
        "dataset": {
            "name": "imagenet_val",
            "version": val_build["version"],
            "build": val_build["build_info_sha256"],
            "config": "default",
            "split": "validation",
        },
        "dataset_rows": 8,
        "rows": 2,
        "split_from": {
            "build": {
                "name": "popular_ood",
                "version": split_build["version"],
                "build": split_build["build_info_sha256"],
                "config": "openood_id_split",
                "split": "test",
            },
            "rows": "openood_v15 == 'val'",
        },
    }
    assert not list(tmp_path.glob("*.partial"))  # the val batches are removed too


def test_without_a_split_every_val_row_is_used_and_without_val_a_note(spec, train, val, tmp_path):
    _, h, _ = val_outputs(spec, val, tmp_path)
    out = tmp_path / "all.safetensors"
    fit_cli(
        spec, train, out, "--preset", "openood_v15", "--val", str(val), "--detectors", "react_energy", "--no-progress"
    )
    stats = DetectorStats.load(out)
    assert stats.react_threshold == np.percentile(h.flatten(), 90)
    assert stats.provenance["val"]["rows"] == 8 and stats.provenance["val"]["split_from"] is None
    asked = ["--detectors", "react_energy", "kl_matching", "cosine"]
    result = fit_cli(spec, train, tmp_path / "none.safetensors", "--preset", "openood_v15", *asked, "--no-progress")
    assert result.stderr.strip().splitlines() == [
        "note: --preset openood_v15 fits react_energy and kl_matching on the ID validation set: left out; "
        "--val DIR [--val-split-from DIR] adds them"
    ]
    stats = DetectorStats.load(tmp_path / "none.safetensors")
    assert stats.react_threshold is None and stats.klm_templates is None and stats.provenance["val"] is None
    assert stats.class_means is not None  # the others are fitted as before


def test_val_inputs_that_cannot_be_fitted_are_one_line_errors(spec, train, val, tmp_path):
    ids = DatasetFolder(val).read_table("default", "validation", ["id"]).column("id").to_pylist()
    short = id_split(tmp_path / "short", ids[:-1])  # the val build's last id is in neither list
    extra = [f"ILSVRC2012_val_{k:08d}" for k in range(90, 94)]
    longer = id_split(tmp_path / "long", ids + extra)  # the 12th id (extra[3]) is a val id the val build lacks
    openood = ["--preset", "openood_v15", "--val", str(val)]
    cases = [
        (["--val", str(val)], "--val: the ninco preset fits every detector on the train set and reads no val set"),
        (
            [*openood, "--val-split-from", str(short)],
            f"--val {val} holds 1 ids absent from the OpenOOD ID split of --val-split-from {short}, e.g. '{ids[-1]}'",
        ),
        (
            [*openood, "--val-split-from", str(longer)],
            f"--val {val} lacks 1 of the 3 val images of the OpenOOD ID split of --val-split-from {longer}, "
            f"e.g. '{extra[3]}'",
        ),
        (
            [*openood, "--val-split-from", str(train)],
            f"--val-split-from {train}: expected a popular_ood build with config openood_id_split",
        ),
        (["--val-split-from", str(short)], "--val-split-from is an option of --val, which is not given"),
    ]
    for argv, expected in cases:
        result = fit_cli(spec, train, tmp_path / "bad.safetensors", *argv, "--no-progress", check=False)
        lines = result.stderr.strip().splitlines()
        assert result.returncode == 2 and len(lines) == 1, result.stderr
        assert lines[0].startswith(f"imagenet-suite ood: error: {expected}"), lines[0]
    assert not (tmp_path / "bad.safetensors").exists()


# -- semantic checks before any work (issue #40, probe 5) ---------------------------------------------------


@pytest.fixture
def no_model(monkeypatch):
    """Loading a model fails the test: a refusal must come before it (the command imports load_model late)."""
    import imagenet_suite.inference

    def refuse(*args, **kwargs):
        raise AssertionError("the model was loaded before the inputs were refused")

    monkeypatch.setattr(imagenet_suite.inference, "load_model", refuse)


def one_line(result, expected: str) -> None:
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert lines[0].startswith(f"imagenet-suite ood: error: {expected}"), lines[0]


def test_a_val_build_as_train_is_refused_before_the_model_loads(spec, val, tmp_path, no_model):
    """Probe 5: `--train` an imagenet_val build fitted "train" statistics on the evaluation set, exit 0."""
    result = fit_cli(spec, val, tmp_path / "s.safetensors", "--no-progress", check=False)
    one_line(
        result,
        f"--train {val}: the build is imagenet_val (split 'validation'), not ImageNet's train split (imagenet_train "
        "'train'): the statistics would be fitted on images the detectors are then evaluated on; pass "
        "--allow-non-train to fit on it anyway (recorded in the file's provenance)",
    )
    assert not list(tmp_path.iterdir())  # nothing written, not even predict's work folder


def test_allow_non_train_fits_on_another_split_and_records_it(spec, val, tmp_path):
    out = tmp_path / "val.safetensors"
    fit_cli(spec, val, out, "--allow-non-train", "--detectors", "knn", "--no-progress")
    provenance = DetectorStats.load(out).provenance
    assert provenance["allow_non_train"] is True and provenance["dataset"]["name"] == "imagenet_val"
    assert provenance["rows"] == 8


def test_the_train_split_is_recorded_as_not_overridden(fitted):
    assert DetectorStats.load(fitted["path"]).provenance["allow_non_train"] is False  # (another test edits "stats")


def test_classes_without_train_rows_are_refused_before_a_library_model_loads(train, tmp_path, no_model):
    """A 1000-class library model on a train build of 3 classes: the class means cannot be fitted, which the
    fit found only after predicting every image. Now the labels say so before the model is loaded."""
    argv = ["ood", "fit-stats", "--model", "timm:test_resnet", "--weights", "none", "--train", str(train)]
    result = run_cli(*argv, "--out", str(tmp_path / "s.safetensors"), "--device", "cpu", check=False)
    one_line(
        result,
        f"--train {train} (default/train, 15 rows) has no row of 997 of the model's 1,000 classes, e.g. class 3 "
        "(n01491361): the class means of mahalanobis, relative_mahalanobis, cosine, rcos need a row of every class",
    )
    # detectors that need no class means do not need every class
    from imagenet_suite.inference.fit_stats import FitStatsOptions, check_coverage, train_rows

    options = FitStatsOptions(detectors=("knn", "vim"))
    check_coverage(train_rows(train, None, None, options), 1000, options)


def test_a_user_models_classes_are_checked_once_loaded_before_any_image(train, tmp_path, monkeypatch):
    """A user model's classes are known only once it is built: a 4-class head on a build of classes 0..2 is
    refused then, before predict reads an image (and with --per-class, on the rows drawn)."""
    path = tmp_path / "four.py"
    path.write_text(
        "from torch import nn\n\ndef make():\n"
        "    return nn.Sequential(nn.Conv2d(3, 8, 3, stride=8), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 4))\n"
    )

    def no_images(*args, **kwargs):
        raise AssertionError("images were read before the classes were checked")

    monkeypatch.setattr(fit_module, "predict_batches", no_images)
    result = fit_cli(
        f"{path}:make", train, tmp_path / "s.safetensors", "--per-class", "2", "--no-progress", check=False
    )
    one_line(
        result,
        f"--train {train} (default/train, 6 rows, 2 per class) has no row of 1 of the model's 4 classes, e.g. "
        "class 3 (n01491361)",
    )


def test_labels_that_are_not_imagenet_classes_are_refused(train, monkeypatch):
    from imagenet_suite.inference.fit_stats import FitStatsOptions, train_rows

    ids = DatasetFolder(train).read_table("default", "train", ["id"]).column("id").to_pylist()
    labels = np.array([0] * 14 + [1000])
    monkeypatch.setattr(fit_module, "_ids_and_labels", lambda *a: (ids, labels))
    with pytest.raises(ConfigError, match=rf"^train .*: row '{ids[-1]}' has label 1000, not an ImageNet-1k class"):
        train_rows(train, None, None, FitStatsOptions())
