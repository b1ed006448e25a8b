"""Every input a command reuses is verified like a dataset (issue 40, probes 1 and 3).

Probe 1: a run folder's own outputs file, changed by one payload byte (a logit, still a readable file), is
refused by ``evaluate`` into that run folder and by a sweep's "done" skip — one line naming the file, the
sha256 recorded when it was written and the file's — never reused. A file whose sha256 was never recorded
(the run stopped between writing it and recording it) is predicted again, not trusted.

Probe 3: a user model's code is part of its identity. After the ``.py`` is edited (ReLU → Tanh: the same
parameters, so nothing but the code tells), a sweep does not take the model as done (a new run folder), a
plain ``evaluate`` into the old run folder is refused naming both code hashes, predict does not resume the
old model's batches, and the prediction store does not hand out the old model's predictions.

Probe 2 (a detector-statistics file changed by one byte) is in ``tests/test_ood_fit_stats.py``, beside the
``ood fit-stats`` file it changes. Every CLI case runs in this process: exit 2 (a sweep's failed model: 1)
and one stderr line.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import torch

from imagenet_suite import cli
from imagenet_suite.core.options import BuildOptions
from imagenet_suite.core.runner import build_dataset
from imagenet_suite.errors import ConfigError
from imagenet_suite.files import sha256_file
from imagenet_suite.inference.models import load_model
from imagenet_suite.inference.predict import PredictJob, PredictOptions
from imagenet_suite.inference.resume import partial_folder
from imagenet_suite.inference.store import PredictionStore
from imagenet_suite.inference.sweep import read_models
from imagenet_suite.inference.user_models import model_code_sha256
from tests.fixtures import imagenet_layouts as val_fx
from tests.helpers import one_line

MODEL = "timm:test_resnet"
RUN_FLAGS = ("--batch-size", "4", "--workers", "0", "--bootstrap", "0", "--no-progress")
USER_MODEL = """from torch import nn


def make():
    return nn.Sequential(nn.Conv2d(3, 4, 3, stride=4), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(4, 1000))
"""
EDITED_MODEL = USER_MODEL.replace("nn.ReLU()", "nn.Tanh()")  # the same parameters: only the code differs


@pytest.fixture(scope="module")
def build(tmp_path_factory) -> Path:
    """An imagenet_val build of four images."""
    root = tmp_path_factory.mktemp("verified-reuse")
    manual = val_fx.write_folders_layout(root / "manual", val_fx.make_val_images(4))
    return build_dataset("imagenet_val", root / "out", options=BuildOptions(manual_dir=manual, progress=False))


def evaluate(dataset: Path, out: Path, model: str = MODEL) -> list[str]:
    return ["evaluate", "--model", model, "--weights", "none", "--datasets", str(dataset), "--out", str(out),
            *RUN_FLAGS]  # fmt: skip


def sweep(models: str, dataset: Path, out: Path) -> list[str]:
    return ["evaluate", "--models", models, "--weights", "none", "--datasets", str(dataset), "--out", str(out),
            *RUN_FLAGS]  # fmt: skip


def flip_a_logit_byte(path: Path) -> None:
    """Change one payload byte of an outputs file: a mantissa byte of its first logit (the file stays a
    readable outputs file with finite logits; only its bytes tell)."""
    logits = torch.load(path, weights_only=True)["logits"]
    data = bytearray(path.read_bytes())
    at = bytes(data).find(logits.numpy().tobytes())
    assert at > 0
    data[at + 1] ^= 0x40
    path.write_bytes(bytes(data))
    changed = torch.load(path, weights_only=True)["logits"]
    assert torch.isfinite(changed).all() and not torch.equal(changed, logits)


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# ------------------------------------------------------------------------------------ probe 1: outputs files


def test_a_changed_outputs_file_of_the_run_folder_is_refused(build, tmp_path, capsys):
    run = tmp_path / "run"
    assert cli.main(evaluate(build, run)) == 0
    outputs, record_path = run / "outputs" / "imagenet_val.pt", run / "builds" / "imagenet_val.json"
    written = outputs.read_bytes()
    expected = hashlib.sha256(written).hexdigest()
    record = json.loads(record_path.read_text())
    assert record["format"] == "imagenet-suite.outputs-record/2" and record["sha256"] == expected
    flip_a_logit_byte(outputs)
    before = snapshot(run)
    line = one_line(capsys, evaluate(build, run))
    assert line == (
        f"imagenet-suite evaluate: error: {outputs}: sha256 {sha256_file(outputs)}, but {record_path} recorded "
        f"{expected} when it was written: the file changed since; delete it to predict again, or choose another --out"
    ), line
    assert snapshot(run) == before  # refused before any work
    outputs.unlink()  # the way out the message names
    assert cli.main(evaluate(build, run)) == 0
    assert outputs.read_bytes() == written


def test_an_outputs_file_whose_sha256_was_never_recorded_is_predicted_again(build, tmp_path, capsys):
    """As left by a run killed between writing the outputs file and recording its sha256: the file is not
    trusted (here it is even changed) but predicted again, and its sha256 recorded."""
    run = tmp_path / "run"
    assert cli.main(evaluate(build, run)) == 0
    outputs, record_path = run / "outputs" / "imagenet_val.pt", run / "builds" / "imagenet_val.json"
    written, suite = outputs.read_bytes(), json.loads((run / "suite.json").read_text())
    record = json.loads(record_path.read_text())
    record_path.write_text(json.dumps({**record, "sha256": None}))
    flip_a_logit_byte(outputs)
    assert cli.main(evaluate(build, run)) == 0
    assert outputs.read_bytes() == written
    assert json.loads(record_path.read_text()) == record
    assert json.loads((run / "suite.json").read_text())["datasets"] == suite["datasets"]


def test_a_sweep_does_not_take_a_model_whose_outputs_changed_as_done(build, tmp_path, capsys):
    out = tmp_path / "sweep"
    assert cli.main(sweep(MODEL, build, out)) == 0
    capsys.readouterr()
    run = out / read_models([MODEL], "none")[0].run_name
    outputs, record_path = run / "outputs" / "imagenet_val.pt", run / "builds" / "imagenet_val.json"
    expected = sha256_file(outputs)
    flip_a_logit_byte(outputs)
    before = snapshot(run)
    assert cli.main(sweep(MODEL, build, out)) == 1  # a failed model
    err = capsys.readouterr().err.strip()
    assert err == (
        f"imagenet-suite evaluate: {MODEL} failed: {outputs}: sha256 {sha256_file(outputs)}, but {record_path} "
        f"recorded {expected} when it was written: the file changed since; delete it to predict again, or choose "
        "another --out"
    ), err
    record = json.loads((out / "sweep.json").read_text())["models"][run.name]
    assert record["status"] == "failed" and record["stage"] == "evaluate"
    assert snapshot(run) == before


# ------------------------------------------------------------------------------- probe 3: a user model's code


def test_an_edited_user_model_is_not_taken_as_done_nor_its_outputs_reused(build, tmp_path, capsys):
    model = tmp_path / "user_model.py"
    model.write_text(USER_MODEL)
    spec, out = f"{model}:make", tmp_path / "sweep"
    old_code = hashlib.sha256(USER_MODEL.encode()).hexdigest()
    new_code = hashlib.sha256(EDITED_MODEL.encode()).hexdigest()
    assert cli.main(sweep(spec, build, out)) == 0
    first = out / read_models([spec], "none")[0].run_name
    assert first.name.endswith(f"@none-seed0-code-{old_code[:16]}")
    assert json.loads((first / "run.json").read_text())["code_sha256"] == old_code
    old_outputs = (first / "outputs" / "imagenet_val.pt").read_bytes()

    model.write_text(EDITED_MODEL)
    capsys.readouterr()
    assert cli.main(sweep(spec, build, out)) == 0  # evaluated again, into the folder of the edited model
    second = out / read_models([spec], "none")[0].run_name
    assert second != first and second.name.endswith(f"@none-seed0-code-{new_code[:16]}")
    record = json.loads((out / "sweep.json").read_text())["models"]
    assert list(record) == [second.name] and record[second.name]["code_sha256"] == new_code
    assert (second / "outputs" / "imagenet_val.pt").read_bytes() != old_outputs  # Tanh, not ReLU

    before = snapshot(first)
    line = one_line(capsys, evaluate(build, first, model=spec))
    assert line.endswith(
        f"--out {first} holds the run of {spec}, not of this model: model code sha256 {old_code[:12]} there, "
        f"sha256 {new_code[:12]} now; choose another --out"
    ), line
    assert snapshot(first) == before


def test_a_run_json_without_the_code_of_its_user_model_is_refused(build, tmp_path, capsys):
    """A run folder of an older imagenet-suite recorded no code: it cannot be told to be this model's."""
    model = tmp_path / "user_model.py"
    model.write_text(USER_MODEL)
    spec, run = f"{model}:make", tmp_path / "run"
    assert cli.main(evaluate(build, run, model=spec)) == 0
    manifest = json.loads((run / "run.json").read_text())
    del manifest["code_sha256"]
    (run / "run.json").write_text(json.dumps(manifest))
    line = one_line(capsys, evaluate(build, run, model=spec))
    code = hashlib.sha256(USER_MODEL.encode()).hexdigest()
    assert (
        "model code not recorded (a run.json of an older imagenet-suite) there, "
        f"sha256 {code[:12]} now; choose another --out"
    ) in line, line


def test_an_edited_user_model_neither_resumes_nor_shares_predictions(build, tmp_path, capsys):
    model = tmp_path / "user_model.py"
    model.write_text(USER_MODEL)
    spec = f"{model}:make"
    options = PredictOptions(batch_size=4, workers=0, progress=False)
    old = load_model(spec, "none")
    assert old.code_sha256 == hashlib.sha256(USER_MODEL.encode()).hexdigest()
    old_job = PredictJob.of(build, old, options)
    store = PredictionStore(tmp_path / "store")
    first = store.predict(build, old, tmp_path / "first.pt", options=options)

    model.write_text(EDITED_MODEL)
    new = load_model(spec, "none")
    new_job = PredictJob.of(build, new, options)
    assert {k for k in {*old_job.identity(), *new_job.identity()} if old_job.identity().get(k) != new_job.identity().get(k)} == {
        "code_sha256"
    }  # fmt: skip
    calls = []
    hook = new.model.register_forward_hook(lambda *args: calls.append(1))
    again = PredictionStore(tmp_path / "store").predict(build, new, tmp_path / "again.pt", options=options)
    hook.remove()
    assert calls and again.read_bytes() != first.read_bytes()  # predicted by the edited model, not copied

    out = tmp_path / "resumed.pt"  # a predict run of the old model that stopped with its batches kept
    partial_folder(out.with_name(out.name + ".partial"), old_job.manifest(), "out")
    argv = ["predict", "--model", spec, "--weights", "none", str(build), "--out", str(out), *RUN_FLAGS[:4]]
    line = one_line(capsys, [*argv, "--no-progress"])
    assert "holds partial outputs of a different run (differs in ['code_sha256'])" in line, line


def test_model_code_is_hashed_without_running_it_and_as_executed(tmp_path, monkeypatch):
    model = tmp_path / "user_model.py"
    model.write_text(USER_MODEL)
    digest = hashlib.sha256(USER_MODEL.encode()).hexdigest()
    assert read_models([f"{model}:make"], "none")[0].code_sha256 == digest  # read, not run: nothing loaded
    assert read_models([MODEL], "none")[0].code_sha256 is None  # a library model: its tag and weights say it all
    assert load_model(MODEL, "none").code_sha256 is None
    monkeypatch.syspath_prepend(str(tmp_path))  # module:callable: the module's file as import finds it
    assert model_code_sha256("user_model:make") == digest
    assert load_model("user_model:make", "none").code_sha256 == digest
    model.write_text("def make(:\n")
    with pytest.raises(ConfigError, match=r"importing .*user_model\.py failed \(SyntaxError"):
        load_model(f"{model}:make", "none")
