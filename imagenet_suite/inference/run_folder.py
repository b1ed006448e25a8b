"""The run folder of one model (:func:`~imagenet_suite.inference.evaluate.run_suite` writes it; its layout is in
:mod:`~imagenet_suite.inference.evaluate`): its file names, run.json (:func:`run_manifest`: what identifies the
model), the records of the builds its outputs files were predicted from (``builds/<key>.json``,
:func:`write_outputs_record`), and the read-only checks of an existing folder.

A run folder is checked before any work (:func:`check_run_folder`): run.json must name this model (spec,
weights, parameter count), an existing suite.json must be of a format this version reads and well
formed, and an outputs file is reused only when its record names the same build as the folder given
now. Outputs predicted from another build are refused (one line naming both builds), not predicted
again: the run folder is the evidence behind its suite.json, so it is not silently rewritten for other
data (a wrong ``datasets`` folder is the usual cause); delete the file, or choose another ``run_dir``.
An outputs file without a record (a run folder of an older imagenet-suite) is refused alike.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import RunFolderError, param
from ..files import atomic_write_bytes
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
from .zero_shot import head_identity

RUN_MANIFEST = "run.json"
PREDICTIONS = "predictions"  # the run folder's prediction store
ADVERSARIAL_JSON = "adversarial.json"
ADVERSARIAL_PARTIAL = "adversarial.partial"
RUN_FORMAT = "imagenet-suite.run/2"
OUTPUTS_RECORD_FORMAT = "imagenet-suite.outputs-record/1"
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
        # weights_source: absent in run.json written before tags were recorded; zero_shot: an open_clip model's head
        {"weights_source": Maybe(WEIGHTS_SOURCE), "zero_shot": Maybe(ZERO_SHOT_HEAD)},
    ),
}
OUTPUTS_RECORD = Fields({"format": Text(choices=(OUTPUTS_RECORD_FORMAT,)), "key": TEXT, "dataset": BUILD})


def run_manifest(loaded: LoadedModel) -> dict[str, Any]:
    """run.json: what identifies the model of a run folder (``weights_source``: the weights tag and where
    the weights came from, :meth:`~imagenet_suite.inference.models.WeightsSource.record`)."""
    return {
        "format": RUN_FORMAT,
        "model": loaded.spec,
        "weights": loaded.weights,
        "weights_sha256": loaded.weights_sha256,
        "weights_digest": weights_digest(loaded),
        "weights_source": loaded.source.record() if loaded.source is not None else None,
        "params": sum(parameter.numel() for parameter in loaded.model.parameters()),
        **({"zero_shot": head_identity(loaded.zero_shot)} if loaded.zero_shot is not None else {}),
    }


def check_run_folder(run_dir: str | Path, manifest: dict[str, Any], targets: Sequence[SuiteTarget]) -> None:
    """Read-only checks of an existing run folder before any work (RunFolderError, one line): run.json
    names this model (else: what differs), suite.json and adversarial.json are well formed and of a
    format this version reads, and every outputs file present was predicted from the build given now."""
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
            _check_outputs_record(run_dir, target, manifest["model"])


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


def _weights_text(manifest: dict[str, Any], legacy: bool = False) -> str:
    if legacy:
        return f"of digest {manifest['weights'][:12]} (a run.json of an older imagenet-suite names no more)"
    sha = manifest["weights_sha256"]
    return manifest["weights"] + (f" (sha256 {sha[:12]})" if sha else "")


def _record_path(outputs: Path) -> Path:
    """``RUN_DIR/builds/<key>.json`` of ``RUN_DIR/outputs/<key>.pt``."""
    return outputs.parent.parent / "builds" / f"{outputs.stem}.json"


def _check_outputs_record(run_dir: Path, target: SuiteTarget, model: str) -> None:
    path = run_dir / "outputs" / f"{target.file_stem}.pt"
    if not path.is_file():
        return
    record_path = _record_path(path)
    if not record_path.is_file():
        raise RunFolderError(
            f"{path}: no record of the dataset build it was predicted from ({record_path} is missing: a run "
            "folder of an older imagenet-suite, or a file put there by hand); delete it to predict again, or "
            f"choose another {param('run_dir')}"
        )
    record = read_json(record_path, "outputs record of `imagenet-suite evaluate`")
    check_json(record, OUTPUTS_RECORD, record_path)
    stale = None
    if record.get("protocol", target.protocol) != target.protocol:
        stale = f"predicted under evaluation protocol {record['protocol']!r}, but its key is {target.protocol!r}'s"
    elif "protocol" not in record and target.build_says_no_crop and model.startswith("torchvision:"):
        stale = "predicted with a centre crop (torchvision models on PatchML were, before imagenet-suite resized them)"
    if stale:
        raise RunFolderError(f"{path}: {stale}; delete it to predict again, or choose another {param('run_dir')}")
    now = dataset_build(target)
    if not same_build(record["dataset"], now):
        raise RunFolderError(
            f"{path}: {_build_change(record['dataset'], now)}; delete it to predict again, or choose another "
            f"{param('run_dir')}"
        )


def write_outputs_record(outputs: Path, target: SuiteTarget) -> None:
    """Write ``builds/<key>.json`` beside the run folder's ``outputs/<key>.pt`` (``outputs``): the build that
    outputs file is about to be predicted from, and under which evaluation protocol."""
    record = {
        "format": OUTPUTS_RECORD_FORMAT,
        "key": target.key,
        "dataset": dataset_build(target),
        "protocol": target.protocol,
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
    "PREDICTIONS",
    "RUN_FORMAT",
    "RUN_MANIFEST",
    "check_run_folder",
    "claim_run_folder",
    "json_bytes",
    "run_manifest",
    "write_outputs_record",
]
