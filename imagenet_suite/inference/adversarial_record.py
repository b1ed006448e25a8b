"""adversarial.json of a run folder (the attacks of :func:`~imagenet_suite.inference.evaluate.run_suite`): whether it
holds an attack's accuracy measured with the settings asked for now (:func:`attack_recorded`), the record with new
accuracies added to those it holds (:func:`adversarial_record`), and its attacks in one line (:func:`attack_text`).

The record's key (``requested_rows``, ``seed``, ``batch_size``, ``attack_convention``) says which run it can
serve: ``evaluate`` reuses a file only when all four match (a file without ``attack_convention``, written
before conventions were recorded, is of the ``pixel`` one).
"""

from __future__ import annotations

from typing import Any

from ..scoring.summary.quba import attack_convention_of
from .attack_space import HESSE2025
from .autoattack import ITERATIONS, QUERIES, AttackSpec


def attack_recorded(recorded: dict[str, Any] | None, spec: AttackSpec, options: Any) -> bool:
    """Whether adversarial.json (``recorded``) holds ``spec``'s accuracy, measured with ``options``' settings."""
    if recorded is None:
        return False
    if spec.norm is None:
        return f"{spec.name}_accuracy" in recorded
    entry = (recorded.get("autoattack") or {}).get(spec.label)
    settings = options.autoattacks[spec.label].record()
    return entry is not None and all(entry.get(name) == settings[name] for name in AUTOATTACK_SETTINGS)


AUTOATTACK_SETTINGS = ("norm", "eps", "version", "iterations", "queries")
"""What an AutoAttack accuracy of adversarial.json is reused for (the library version is recorded, not matched)."""
FGSM_PGD_TEXT = {
    "fgsm": "FGSM eps=8/255",
    "pgd": "PGD eps=8/255 alpha=2/255 steps=10 random_start",
}
CONVENTION_TEXT = {
    HESSE2025: "on the normalised inputs, clamped to [0,1] (hesse2025: Beyond Accuracy's code)",
    "pixel": "in [0,1] pixel space (pixel)",
}
"""How FGSM and PGD met the images, by attack convention, in :func:`attack_text`."""


def adversarial_record(
    recorded: dict[str, Any] | None, result: Any, key: dict[str, Any], build: dict[str, Any]
) -> dict[str, Any]:
    """adversarial.json: ``recorded``'s accuracies (when on the same rows) with ``result``'s added."""
    record = {**key, "rows": result.clean.denominator, "clean_accuracy": result.clean.value}
    old = recorded or {}
    for name in FGSM_PGD_TEXT:
        value = result.accuracy(name).value if name in result.correct else old.get(f"{name}_accuracy")
        if value is not None:
            record[f"{name}_accuracy"] = value
    autoattack = dict(old.get("autoattack") or {})
    for label, settings in result.autoattack.items():
        autoattack[label] = {"accuracy": result.accuracy(label).value, **settings}
    record["attack"] = attack_text(record, autoattack)
    if autoattack:
        record["autoattack"] = {label: autoattack[label] for label in sorted(autoattack)}
    correct = {"clean": result.clean_correct} | {
        name: result.correct[name] for name in FGSM_PGD_TEXT if name in result.correct
    }
    flags = {name: "".join("1" if flag else "0" for flag in found.tolist()) for name, found in correct.items()}
    for name in FGSM_PGD_TEXT:  # an attack of the file reused: its flags, when the file has them
        if name not in flags and (old.get("correct") or {}).get(name) is not None:
            flags[name] = old["correct"][name]
    return {**record, "ids": list(result.ids), "correct": flags, "dataset": build}


def attack_text(record: dict[str, Any], autoattack: dict[str, Any]) -> str:
    """The attacks of an adversarial.json in one line (``attack``), e.g. ``torchattacks FGSM eps=8/255; PGD
    eps=8/255 alpha=2/255 steps=10 random_start on the normalised inputs, clamped to [0,1] (hesse2025:
    Beyond Accuracy's code)``; AutoAttack's then end with ``, inputs in [0,1]``."""
    parts = [text for name, text in FGSM_PGD_TEXT.items() if f"{name}_accuracy" in record]
    if parts:
        parts[0] = "torchattacks " + parts[0]
        parts[-1] += " " + CONVENTION_TEXT[attack_convention_of(record)]
    if not autoattack:
        return "; ".join(parts)
    for label in sorted(autoattack):
        entry = autoattack[label]
        budget = (
            ""
            if (entry["iterations"], entry["queries"]) == (ITERATIONS, QUERIES)
            else (f" ({entry['iterations']} iterations, {entry['queries']} queries)")
        )
        parts.append(
            f"AutoAttack {entry['version']} {entry['norm']} eps={entry['eps']:.6g}{budget} ({entry['library']})"
        )
    return "; ".join(parts) + ", inputs in [0,1]"


__all__ = [
    "AUTOATTACK_SETTINGS",
    "CONVENTION_TEXT",
    "FGSM_PGD_TEXT",
    "adversarial_record",
    "attack_recorded",
    "attack_text",
]
