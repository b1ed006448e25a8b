"""``evaluate --models``: a sweep of three models (random-init timm, torchvision with weights saved to a file,
and a user model from a ``.py`` file with its weights file) over a fixture suite (ImageNet val, both configs,
and ImageNet-R, built by their builders).

The sweep is interrupted in its second model (a KeyboardInterrupt injected into its second prediction),
started again, and must then load and predict exactly what was missing; a third start loads and predicts
nothing. Its leaderboard equals ``imagenet-suite leaderboard`` on the three run folders.
``tests/test_executor_ray.py`` runs the same sweep on a local Ray cluster and compares its suite.json files
with these (:func:`local_sweep` is shared). A model that fails to load or to run is reported, the others go
on; bad models files are one-line errors naming the line.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import torch

from imagenet_suite.errors import ConfigError
from imagenet_suite.inference import evaluate as evaluate_module
from imagenet_suite.inference import sweep as sweep_module
from imagenet_suite.inference.sweep import read_models, read_models_file, run_folder_name
from tests.builder_harness import first_build
from tests.helpers import run_cli
from tests.test_builders import BY_NAME

OUTPUT_STEMS = ("imagenet_val__boxes", "imagenet_val__default", "imagenet_r")
TINY_MODEL = """
from torch import nn

def make():
    return nn.Sequential(nn.Conv2d(3, 8, 3, stride=4), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(8, 1000))

class Broken(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(3, 1000)

    def forward(self, x):
        raise RuntimeError("simulated failure in forward")
"""


@dataclass
class Sweep:
    """The local sweep: its models file, datasets, folder, and what each of its three starts loaded and
    predicted (``(run folder, outputs stem)``), with their exit codes."""

    zoo: Path
    datasets: list[Path]
    out: Path
    names: list[str]
    codes: list[int] = field(default_factory=list)
    loads: list[list[str]] = field(default_factory=list)
    predicted: list[list[tuple[str, str]]] = field(default_factory=list)
    missing_before_resume: set[tuple[str, str]] = field(default_factory=set)
    statuses_after_interrupt: list[str] = field(default_factory=list)


_SWEEPS: dict[str, Sweep] = {}


def write_zoo(root: Path) -> Path:
    """A models file of three random-init models, two with their weights in files, and a comment."""
    import torchvision

    (root / "tiny.py").write_text(TINY_MODEL)
    torch.manual_seed(1)
    torch.save(torchvision.models.mobilenet_v3_small().state_dict(), root / "mobilenet.pt")
    from safetensors.torch import save_file

    torch.manual_seed(2)
    save_file(_tiny(root).state_dict(), root / "tiny.safetensors")
    zoo = root / "zoo.txt"
    zoo.write_text(
        "# three random-init models\n"
        "timm:test_resnet  weights=none  seed=0\n"
        "\n"
        f"torchvision:mobilenet_v3_small  weights={root / 'mobilenet.pt'}   # a torchvision architecture\n"
        f"{root / 'tiny.py'}:make  weights={root / 'tiny.safetensors'}\n"
    )
    return zoo


def _tiny(root: Path):
    from imagenet_suite.inference.models import load_callable

    return load_callable("tiny", str(root / "tiny.py"), "make")()


def sweep_args(zoo: Path, datasets: list[Path], out: Path, *extra: str) -> list[str]:
    return ["evaluate", "--models", str(zoo), "--datasets", *map(str, datasets), "--out", str(out),
            "--batch-size", "16", "--workers", "0", "--bootstrap", "50", "--no-progress", *extra]  # fmt: skip


def local_sweep(scratch) -> Sweep:
    """The three-model sweep, interrupted in its second model, then started twice more (once per session)."""
    if "local" in _SWEEPS:
        return _SWEEPS["local"]
    root = scratch("sweep")
    zoo = write_zoo(root)
    datasets = [first_build(BY_NAME[name], scratch) for name in ("imagenet_val", "imagenet_r")]
    sweep = Sweep(zoo, datasets, root / "local", [entry.run_name for entry in read_models([zoo])])
    store = evaluate_module.PredictionStore  # evaluate predicts through the run's prediction store
    real_predict, real_load = store.predict, sweep_module.load_model
    calls = {"predicted": [], "loads": [], "interrupt": True}

    def counting_predict(self, dataset, loaded, out, **kwargs):
        calls["predicted"].append((Path(out).parent.parent.name, Path(out).stem))
        if calls["interrupt"] and len(calls["predicted"]) == 5:  # the second split of the second model
            raise KeyboardInterrupt
        return real_predict(self, dataset, loaded, out, **kwargs)

    def counting_load(spec, weights=None, seed=0, zero_shot_options=None):
        calls["loads"].append(spec)
        return real_load(spec, weights, seed=seed, zero_shot_options=zero_shot_options)

    store.predict, sweep_module.load_model = counting_predict, counting_load
    try:
        for start in range(3):
            if start == 1:
                models = json.loads((sweep.out / "sweep.json").read_text())["models"]
                sweep.statuses_after_interrupt = [models[name]["status"] for name in sweep.names]
                sweep.missing_before_resume = {
                    (name, stem)
                    for name in sweep.names
                    for stem in OUTPUT_STEMS
                    if not (sweep.out / name / "outputs" / f"{stem}.pt").is_file()
                }
            calls.update(predicted=[], loads=[], interrupt=start == 0)
            sweep.codes.append(run_cli(*sweep_args(zoo, datasets, sweep.out), check=False).returncode)
            sweep.loads.append(calls["loads"])
            sweep.predicted.append(calls["predicted"])
    finally:
        store.predict, sweep_module.load_model = real_predict, real_load
    _SWEEPS["local"] = sweep
    return sweep


@pytest.fixture()
def scratch(tmp_path_factory):
    return lambda name: tmp_path_factory.mktemp(name)


def test_an_interrupted_sweep_redoes_only_what_was_missing(scratch):
    sweep = local_sweep(scratch)
    assert sweep.codes == [130, 0, 0]  # interrupted (as Ctrl-C), then finished, then nothing to do
    first, second, third = sweep.predicted
    assert len(first) == 5 and {name for name, _ in first[:3]} == {sweep.names[0]}
    assert sweep.statuses_after_interrupt == ["done", "pending", "pending"]
    # the second start: the second model's two missing splits, the third model's three; the first not loaded
    assert sorted(second) == sorted(sweep.missing_before_resume)
    assert len(sweep.missing_before_resume) == 2 + 3
    assert [spec.rpartition(":")[2] for spec in sweep.loads[1]] == ["mobilenet_v3_small", "make"]
    assert sweep.loads[2] == [] and third == []  # a finished sweep loads and predicts nothing
    record = json.loads((sweep.out / "sweep.json").read_text())
    assert [record["models"][name]["status"] for name in sweep.names] == ["done"] * 3
    assert record["failures"] == [] and record["leaderboard"] == "leaderboard/leaderboard.md"
    for name in sweep.names:
        suite = json.loads((sweep.out / name / "suite.json").read_text())
        assert set(suite["datasets"]) == {"imagenet_val/boxes", "imagenet_val/default", "imagenet_r"}
        assert record["models"][name]["model"] == suite["model"]


def test_the_sweep_leaderboard_is_the_leaderboard_of_its_run_folders(scratch, tmp_path):
    sweep = local_sweep(scratch)
    run_cli("leaderboard", *(str(sweep.out / name) for name in sweep.names), "--out", str(tmp_path))
    ours = sweep.out / "leaderboard"
    assert sorted(p.name for p in ours.iterdir()) == sorted(p.name for p in tmp_path.iterdir())
    for path in tmp_path.iterdir():
        if path.suffix in (".md", ".csv"):
            assert (ours / path.name).read_bytes() == path.read_bytes(), path.name
    models = [json.loads((sweep.out / n / "suite.json").read_text())["model"] for n in sweep.names]
    assert models == ["timm:test_resnet", "torchvision:mobilenet_v3_small", f"{sweep.zoo.parent / 'tiny.py'}:make"]


def test_a_failing_model_is_reported_and_the_others_go_on(scratch, tmp_path):
    sweep = local_sweep(scratch)
    (tmp_path / "broken_import.py").write_text("raise ImportError('simulated: a missing dependency')\n")
    zoo = tmp_path / "zoo.txt"
    zoo.write_text(
        f"{sweep.zoo.parent / 'tiny.py'}:Broken weights=none\n"
        f"{tmp_path / 'broken_import.py'}:make weights=none\n"
        "timm:test_resnet weights=none seed=0\n"
    )
    datasets = sweep.datasets[1:]  # ImageNet-R alone
    result = run_cli(*sweep_args(zoo, datasets, tmp_path / "out"), check=False)
    assert result.returncode == 1
    errors = result.stderr.strip().splitlines()
    assert len(errors) == 2 and "simulated failure in forward" in errors[0] and "missing dependency" in errors[1]
    record = json.loads((tmp_path / "out" / "sweep.json").read_text())
    assert [(f["stage"], f["error"].split(":")[0]) for f in record["failures"]] == [
        ("evaluate", "RuntimeError"), ("load", "ConfigError")
    ]  # fmt: skip
    good = read_models([zoo])[2].run_name
    assert [record["models"][name]["status"] for name in record["models"]] == ["failed", "failed", "done"]
    for failure in record["failures"]:
        assert "Traceback" in (tmp_path / "out" / "failures" / f"{failure['run_folder']}.txt").read_text()
    board = (tmp_path / "out" / "leaderboard" / "leaderboard.md").read_text()
    assert "| timm:test_resnet |" in board and "Broken" not in board
    assert result.stdout.strip().splitlines()[-1] == str(tmp_path / "out" / "leaderboard" / "leaderboard.md")
    assert (tmp_path / "out" / good / "suite.json").is_file()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("timm:test_resnet weight=none\n", r"zoo.txt:1: 'weight=none' is not weights=FILE\|none, seed=N or detector_stats=FILE"),
        ("timm:test_resnet weights=none detector_stats=gone.safetensors\n",
         r"zoo.txt:1: detector_stats file gone.safetensors does not exist"),
        ("timm:test_resnet weights=none seed=x\n", r"zoo.txt:1: seed must be an integer >= 0, got 'x'"),
        ("\n# two\ntimm:test_resnet seed=3\n", r"zoo.txt:3: seed= is only used with weights=none"),
        ("timm:test_resnet weights=none weights=none\n", r"zoo.txt:1: weights= is given twice"),
        ("timm:no_such_model_xyz weights=none\n", r"zoo.txt:1: model 'timm:no_such_model_xyz': timm has no model"),
        ("timm:test_resnet weights=gone.pt\n", r"zoo.txt:1: weights file gone.pt does not exist"),
        ("missing/file.py:make weights=none\n", r"zoo.txt:1: model file missing/file.py does not exist"),
        ("timm:test_resnet weights=none\n\ntimm:test_resnet weights=none seed=0 # again\n",
         r"zoo.txt:3: the same model as .*zoo.txt:1 \(spec, weights and seed\); list each model once"),
        ("# nothing\n\n", r"zoo.txt: no models \(every line is blank or a # comment\)"),
    ],
)  # fmt: skip
def test_a_bad_models_file_is_a_one_line_error_naming_the_line(tmp_path, text, message):
    (tmp_path / "zoo.txt").write_text(text)
    with pytest.raises(ConfigError, match=message) as raised:
        read_models_file(tmp_path / "zoo.txt")
    assert raised.value.parameters[0] == "models" and "\n" not in str(raised.value)


def test_run_folder_names_are_distinct_and_stable(tmp_path):
    weights = tmp_path / "w.pt"
    torch.save({}, weights)
    entries = read_models(["timm:test_resnet", "timm:test_resnet.r160_in1k", "a_b:c", "a:b_c"], "none")
    names = [entry.run_name for entry in entries]
    assert names == [
        "timm+test_resnet@none-seed0", "timm+test_resnet.r160_in1k@none-seed0", "a_b+c@none-seed0", "a+b_c@none-seed0"
    ]  # fmt: skip
    digest = __import__("hashlib").sha256(weights.read_bytes()).hexdigest()
    assert read_models(["timm:test_resnet"], str(weights))[0].run_name == f"timm+test_resnet@sha256-{digest[:16]}"
    long = "m" * 300 + ":make"
    assert len(run_folder_name(long)) == 200 and run_folder_name(long) != run_folder_name("m" * 299 + "n:make")


def test_a_models_file_line_gives_its_model_its_own_detector_statistics(tmp_path, monkeypatch):
    """``detector_stats=FILE`` on a line replaces ``--detector-stats`` for that model only, and a changed file
    changes the model's fingerprint (a sweep does not take it as done)."""
    from imagenet_suite.inference.suite_options import SuiteOptions
    from imagenet_suite.inference.sweep import _fingerprint

    monkeypatch.chdir(tmp_path)
    Path("a.safetensors").write_bytes(b"statistics of model a")
    Path("shared.pt").write_bytes(b"statistics of the other")
    Path("zoo.txt").write_text(
        "timm:test_resnet weights=none detector_stats=a.safetensors\ntimm:test_vit weights=none\n"
    )
    own, other = read_models_file("zoo.txt")
    shared = SuiteOptions(detector_stats="shared.pt")
    assert own.options(shared).detector_stats == "a.safetensors" and other.options(shared) is shared
    assert own.record()["detector_stats"] == "a.safetensors" and "detector_stats" not in other.record()
    before = _fingerprint(own, {})
    Path("a.safetensors").write_bytes(b"statistics of model a, fitted again")
    assert _fingerprint(own, {}) != before


def test_the_attack_convention_is_part_of_a_sweeps_fingerprint(tmp_path, monkeypatch):
    """A sweep attacked under one convention is not taken as done for the other: the options a run's results
    depend on (and so every model's fingerprint) name the attack convention."""
    from imagenet_suite.inference.suite_options import SuiteOptions
    from imagenet_suite.inference.sweep import _fingerprint, result_options

    monkeypatch.chdir(tmp_path)
    Path("zoo.txt").write_text("timm:test_resnet weights=none\n")
    (entry,) = read_models_file("zoo.txt")
    hesse, pixel = (SuiteOptions(adversarial=8, attack_convention=name) for name in ("hesse2025", "pixel"))
    assert result_options(hesse)["attack_convention"] == "hesse2025" == SuiteOptions(adversarial=8).attack_convention
    assert result_options(pixel)["attack_convention"] == "pixel"
    fingerprints = {_fingerprint(entry, {"options": result_options(o)}) for o in (hesse, pixel)}
    assert len(fingerprints) == 2
