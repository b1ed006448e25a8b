"""The run folder of one model (:func:`~imagenet_suite.inference.evaluate.run_suite` writes it; its layout is in
:mod:`~imagenet_suite.inference.evaluate`): its file names, run.json (:func:`run_manifest`: what identifies the
model), the records of the builds its outputs files were predicted from (``builds/<key>.json``,
:func:`write_outputs_record`), and the read-only checks of an existing folder.

A run folder is checked before any work (:func:`check_run_folder`): run.json must name this model (spec,
weights, parameter count, and a user model's code: the sha256 of its source file), an existing suite.json
must be of a format this version reads and well formed, and an outputs file is reused only when its
record names the same build as the folder given now and the file still has the sha256 recorded when it
was written. Outputs predicted from another build are refused (one line naming both builds), not
predicted again: the run folder is the evidence behind its suite.json, so it is not silently rewritten
for other data (a wrong ``datasets`` folder is the usual cause); delete the file, or choose another
``run_dir``. An outputs file whose bytes changed since it was written is refused alike (one line naming
the file, the recorded and the actual sha256), and so is one without a record, or whose record holds no
sha256 (``outputs-record/1``: a run folder of an older imagenet-suite) — it cannot be verified.

The record of an outputs file is written twice: before it is predicted (the build, ``"sha256": null``), and
once the file is written (its sha256). A file whose record still holds no sha256 was written by a run that
stopped in between: it is not trusted, but predicted again (:func:`reusable_outputs`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import RunFolderError, param
from ..files import atomic_write_bytes, cached_sha256
from ..scoring.summary.json_schema import (
    COUNT,
    SHA256,
    TEXT,
    Fields,
    Maybe,
    Number,
    Text,
    check_json,
    describe_json,
    read_json,
)
from ..scoring.summary.suite_json import ADVERSARIAL, BUILD, SUITE_JSON, WEIGHTS_SOURCE, read_suite
from .models import LoadedModel, weights_digest
from .suite_targets import SuiteTarget, dataset_build, describe_build, same_build
from .user_models import LIBRARIES
from .zero_shot import head_identity

RUN_MANIFEST = "run.json"
PREDICTIONS = "predictions"  # the run folder's prediction store
ADVERSARIAL_JSON = "adversarial.json"
ADVERSARIAL_PARTIAL = "adversarial.partial"
RUN_FORMAT = "imagenet-suite.run/2"
OUTPUTS_RECORD_FORMAT = "imagenet-suite.outputs-record/2"  # /1 + the sha256 of the outputs file
OUTPUTS_RECORD_V1 = "imagenet-suite.outputs-record/1"  # no sha256: such a file cannot be verified
ZERO_SHOT_HEAD = Fields(
    {
        "prompts": TEXT,
        "class_names": TEXT,
        "prompts_sha256": SHA256,
        "prompts_per_class": COUNT,
        "logit_scale": Number(),
        "logit_bias": Maybe(Number()),
        "probabilities": TEXT,
    }
)
"""run.json's ``zero_shot``: what decides a zero-shot head's outputs (:func:`.zero_shot.head_identity`)."""
RUN_SCHEMAS: dict[str | None, Fields] = {
    None: Fields({"model": TEXT, "weights": SHA256}),  # before formats: "weights" held weights_digest()
    RUN_FORMAT: Fields(
        {
            "format": Text(choices=(RUN_FORMAT,)),
            "model": TEXT,
            "weights": TEXT,
            "weights_sha256": Maybe(SHA256),
            "weights_digest": SHA256,
            "params": COUNT,
        },
        # weights_source: absent in run.json written before tags were recorded; zero_shot: an open_clip model's head;
        # code_sha256: a user model's source file (absent for library models, and in run.json written before)
        {"weights_source": Maybe(WEIGHTS_SOURCE), "zero_shot": Maybe(ZERO_SHOT_HEAD), "code_sha256": Maybe(SHA256)},
    ),
}
OUTPUTS_RECORD = Fields(
    {"format": Text(choices=(OUTPUTS_RECORD_FORMAT,)), "key": TEXT, "dataset": BUILD, "sha256": Maybe(SHA256)}
)


def run_manifest(loaded: LoadedModel) -> dict[str, Any]:
    """run.json: what identifies the model of a run folder (``weights_source``: the weights tag and where
    the weights came from, :meth:`~imagenet_suite.inference.models.WeightsSource.record`; ``code_sha256``:
    a user model's source file, :mod:`~imagenet_suite.inference.user_models`)."""
    return {
        "format": RUN_FORMAT,
        "model": loaded.spec,
        "weights": loaded.weights,
        "weights_sha256": loaded.weights_sha256,
        "weights_digest": weights_digest(loaded),
        "weights_source": loaded.source.record() if loaded.source is not None else None,
        "params": sum(parameter.numel() for parameter in loaded.model.parameters()),
        **({"zero_shot": head_identity(loaded.zero_shot)} if loaded.zero_shot is not None else {}),
        **({"code_sha256": loaded.code_sha256} if loaded.code_sha256 is not None else {}),
    }


def check_run_folder(run_dir: str | Path, manifest: dict[str, Any], targets: Sequence[SuiteTarget]) -> None:
    """Read-only checks of an existing run folder before any work (RunFolderError, one line): run.json
    names this model (else: what differs), suite.json and adversarial.json are well formed and of a
    format this version reads, and every outputs file present was predicted from the build given now and
    still has the sha256 recorded when it was written."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        return
    if (run_dir / RUN_MANIFEST).is_file():
        _check_manifest(run_dir, manifest)
    if (run_dir / SUITE_JSON).is_file():
        read_suite(run_dir / SUITE_JSON)
    if (run_dir / ADVERSARIAL_JSON).is_file():
        check_json(read_json(run_dir / ADVERSARIAL_JSON, ADVERSARIAL_JSON), ADVERSARIAL, run_dir / ADVERSARIAL_JSON)
    if (run_dir / ADVERSARIAL_PARTIAL).exists() and not (run_dir / ADVERSARIAL_PARTIAL).is_dir():
        raise RunFolderError(
            f"{run_dir / ADVERSARIAL_PARTIAL}: in the way (the attacks keep their finished batches there)"
        )
    for target in targets:
        if target.has_images:
            _check_outputs_record(run_dir, target)


def _check_manifest(run_dir: Path, manifest: dict[str, Any]) -> None:
    path = run_dir / RUN_MANIFEST
    found = read_json(path, "run.json of `imagenet-suite evaluate`")
    if not isinstance(found, dict):
        raise RunFolderError(f"{path}: expected an object, found {describe_json(found)}")
    if "format" in found and found["format"] != RUN_FORMAT:
        raise RunFolderError(
            f"{path}: format is {describe_json(found['format'])}, but this imagenet-suite reads run.json of format "
            f"{json.dumps(RUN_FORMAT)} (or without one, as written before formats); choose another {param('run_dir')}"
        )
    check_json(found, RUN_SCHEMAS[found.get("format")], path)
    legacy = "format" not in found
    digest = found["weights"] if legacy else found["weights_digest"]
    differences = []
    if found["model"] != manifest["model"]:
        differences.append(f"model {found['model']} there, {manifest['model']} now")
    if digest != manifest["weights_digest"]:
        differences.append(f"weights {_weights_text(found, legacy)} there, {_weights_text(manifest)} now")
    elif found.get("weights_source") and manifest["weights_source"]:
        old, new = found["weights_source"].get("tag"), manifest["weights_source"].get("tag")
        if old != new:  # same weights, but the tag's architecture configuration and preprocessing differ
            differences.append(f"weights tag {old} there, {new} now")
    if found.get("zero_shot") != manifest.get("zero_shot"):
        differences.append(f"zero-shot head {_head_text(found)} there, {_head_text(manifest)} now")
    if found.get("code_sha256") != manifest.get("code_sha256"):
        differences.append(f"model code {_code_text(found)} there, {_code_text(manifest)} now")
    if not differences and not legacy and found["params"] != manifest["params"]:
        differences.append(
            f"{found['params']} parameters there, {manifest['params']} now (same spec and weights: the model's code changed)"
        )
    if differences:
        raise RunFolderError(
            f"{param('run_dir')} {run_dir} holds the run of {found['model']}, not of this model: "
            f"{'; '.join(differences)}; choose another {param('run_dir')}"
        )


def _head_text(manifest: dict[str, Any]) -> str:
    head = manifest.get("zero_shot")
    if not head:
        return "none"
    return f"{head['class_names']} names, {head['prompts']} prompts ({head['prompts_sha256'][:12]}), {head['probabilities']}"


def _code_text(manifest: dict[str, Any]) -> str:
    code = manifest.get("code_sha256")
    if code:
        return f"sha256 {code[:12]}"
    if manifest["model"].rpartition(":")[0] in LIBRARIES:
        return "of a library"
    return "not recorded (a run.json of an older imagenet-suite)"


def _weights_text(manifest: dict[str, Any], legacy: bool = False) -> str:
    if legacy:
        return f"of digest {manifest['weights'][:12]} (a run.json of an older imagenet-suite names no more)"
    sha = manifest["weights_sha256"]
    return manifest["weights"] + (f" (sha256 {sha[:12]})" if sha else "")


def _record_path(outputs: Path) -> Path:
    """``RUN_DIR/builds/<key>.json`` of ``RUN_DIR/outputs/<key>.pt``."""
    return outputs.parent.parent / "builds" / f"{outputs.stem}.json"


def _check_outputs_record(run_dir: Path, target: SuiteTarget) -> None:
    path = run_dir / "outputs" / f"{target.file_stem}.pt"
    if not path.is_file():
        return
    record_path, record = _read_outputs_record(path)
    if record.get("protocol", target.protocol) != target.protocol:
        raise RunFolderError(
            f"{path}: predicted under evaluation protocol {record['protocol']!r}, but its key is "
            f"{target.protocol!r}'s; delete it to predict again, or choose another {param('run_dir')}"
        )
    now = dataset_build(target)
    if not same_build(record["dataset"], now):
        raise RunFolderError(
            f"{path}: {_build_change(record['dataset'], now)}; delete it to predict again, or choose another "
            f"{param('run_dir')}"
        )
    _check_outputs_sha256(path, record_path, record["sha256"])


def _read_outputs_record(path: Path) -> tuple[Path, dict[str, Any]]:
    """The record of the outputs file ``path`` and where it is, checked (RunFolderError, one line: missing,
    of another layout, or of ``outputs-record/1``, which holds no sha256 to verify the file by)."""
    record_path = _record_path(path)
    if not record_path.is_file():
        raise RunFolderError(
            f"{path}: no record of the dataset build it was predicted from ({record_path} is missing: a run "
            "folder of an older imagenet-suite, or a file put there by hand); delete it to predict again, or "
            f"choose another {param('run_dir')}"
        )
    record = read_json(record_path, "outputs record of `imagenet-suite evaluate`")
    if isinstance(record, dict) and record.get("format") == OUTPUTS_RECORD_V1:
        raise RunFolderError(
            f"{path}: its record {record_path} ({OUTPUTS_RECORD_V1}, a run folder of an older imagenet-suite) holds "
            f"no sha256 of it, so it cannot be verified; delete it to predict again, or choose another "
            f"{param('run_dir')}"
        )
    check_json(record, OUTPUTS_RECORD, record_path)
    return record_path, record


def _check_outputs_sha256(path: Path, record_path: Path, expected: str | None) -> None:
    """RunFolderError unless the outputs file at ``path`` has the sha256 its record holds (None: the run that
    wrote it stopped before recording it; it is predicted again, see :func:`reusable_outputs`)."""
    if expected is None:
        return
    actual = cached_sha256(path, expected=expected)
    if actual != expected:
        raise RunFolderError(
            f"{path}: sha256 {actual}, but {record_path} recorded {expected} when it was written: the file changed "
            f"since; delete it to predict again, or choose another {param('run_dir')}"
        )


def check_outputs_files(run_dir: str | Path) -> None:
    """Every outputs file of the run folder ``run_dir`` has a record and still has the sha256 recorded when
    it was written (RunFolderError, one line, otherwise; a record without a sha256 is one too: the run that
    wrote the file stopped before recording it)."""
    for path in sorted((Path(run_dir) / "outputs").glob("*.pt")):
        record_path, record = _read_outputs_record(path)
        if record["sha256"] is None:
            raise RunFolderError(
                f"{path}: {record_path} records no sha256 of it (the run that wrote it stopped before); evaluate "
                "it again"
            )
        _check_outputs_sha256(path, record_path, record["sha256"])


def reusable_outputs(outputs: Path) -> bool:
    """Whether the outputs file ``outputs`` (``RUN_DIR/outputs/<key>.pt``) is there to be reused: present, and
    its sha256 recorded (checked by :func:`check_run_folder`). A file whose record holds none was written by a
    run that stopped before recording it, and is predicted again."""
    if not outputs.is_file():
        return False
    record = read_json(_record_path(outputs), "outputs record of `imagenet-suite evaluate`")
    return isinstance(record, dict) and record.get("sha256") is not None


def write_outputs_record(outputs: Path, target: SuiteTarget, sha256: str | None = None) -> None:
    """Write ``builds/<key>.json`` beside the run folder's ``outputs/<key>.pt`` (``outputs``): the build that
    outputs file is predicted from, under which evaluation protocol, and ``sha256``: the file's, once it is
    written (None before: the file is not trusted until its sha256 is recorded)."""
    record = {
        "format": OUTPUTS_RECORD_FORMAT,
        "key": target.key,
        "dataset": dataset_build(target),
        "protocol": target.protocol,
        "sha256": sha256,
    }
    path = _record_path(outputs)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, json_bytes(record))


def claim_run_folder(run_dir: Path, manifest: dict[str, Any]) -> None:
    """Record the model in ``run.json`` (after :func:`check_run_folder`; a run.json written before formats
    is rewritten in the current layout)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    recorded = run_dir / RUN_MANIFEST
    if not recorded.is_file() or read_json(recorded, RUN_MANIFEST) != manifest:
        atomic_write_bytes(recorded, json_bytes(manifest))


def json_bytes(value: Any) -> bytes:
    """A JSON file of the run folder: indented, no NaN, a final newline."""
    return (json.dumps(value, indent=1, allow_nan=False) + "\n").encode()


def _build_change(old: dict[str, Any], new: dict[str, Any]) -> str:
    """What differs between the build outputs were predicted from and the one given now."""
    fields = ("builder", "version", "config", "split")
    if all(old[key] == new[key] for key in fields):
        return (
            f"predicted from another build of {old['builder']} {old['version']} (config {old['config']}, split "
            f"{old['split']}): build_info.json sha256 {old['build_info_sha256'][:12]} in {old['folder']}, now "
            f"{new['build_info_sha256'][:12]} in {new['folder']}"
        )
    return f"predicted from {describe_build(old)}, but {param('datasets')} now gives {describe_build(new)}"


__all__ = [
    "ADVERSARIAL_JSON",
    "ADVERSARIAL_PARTIAL",
    "OUTPUTS_RECORD_FORMAT",
    "OUTPUTS_RECORD_V1",
    "PREDICTIONS",
    "RUN_FORMAT",
    "RUN_MANIFEST",
    "check_outputs_files",
    "check_run_folder",
    "claim_run_folder",
    "json_bytes",
    "reusable_outputs",
    "run_manifest",
    "write_outputs_record",
]
