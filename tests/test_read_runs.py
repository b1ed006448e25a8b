"""Commands that read a run folder check it first: ``leaderboard`` and ``evaluate`` (issue 23).

``leaderboard`` on hand-written suite.json files: an unknown format, another layout or a value of the
wrong type is one stderr line naming the file and the JSON path; runs made on different builds of one
dataset split are refused unless ``--allow-mixed-builds``. ``evaluate`` on two tiny builds of
``imagenet_val`` (same ids, other images and labels): every report names the build it read, outputs
predicted from another build are not reused, a run folder of other weights names what differs, an
existing run folder of another format is refused, and bad arguments stop it before any work. Every
case runs the CLI in this process and expects exit code 2 and exactly one stderr line.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
import torch

from imagenet_suite import cli
from imagenet_suite.core.options import BuildOptions
from imagenet_suite.core.runner import build_dataset
from imagenet_suite.core.sources import read_pins_file
from imagenet_suite.files import sha256_file
from imagenet_suite.inference import load_model
from imagenet_suite.scoring.summary.suite import suite_summary
from tests.fixtures import imagenet_layouts as val_fx
from tests.helpers import one_line

MODEL = "timm:test_resnet"
FORMAT = "imagenet-suite.suite/2"  # a suite.json format still read, written out independently of the package
WRITTEN_FORMAT = "imagenet-suite.suite/4"  # the format evaluate writes now (/3 with each report's rows as columns)


# ---------------------------------------------------------------------------------------------- leaderboard


def build(sha: str, builder: str = "imagenet_val", config: str = "default", split: str = "validation") -> dict:
    return {
        "folder": f"/data/{builder}-1.0.0-{sha[:4]}",
        "builder": builder,
        "version": "1.0.0",
        "config": config,
        "split": split,
        "build_info_sha256": sha,
    }


SHA_A, SHA_B = "a" * 64, "b" * 64


def report(dataset: str, accuracy: float, scored: dict, id_outputs: dict | None = None) -> dict:
    row = {"metric": "top1_accuracy", "variant": "", "subgroup": "", "value": accuracy}
    return {
        "meta": {"dataset": dataset, "version": "1.0.0", "config": "default", "split": "validation"},
        "metrics": [{**row, "numerator": None, "denominator": None}],
        "provenance": {"dataset": scored, "outputs": scored, "id_outputs": id_outputs},
    }


def suite_json(
    model: str,
    accuracy: float,
    val_sha: str = SHA_A,
    legacy: bool = False,
    adversarial: dict | None = None,
    **reports: dict,
) -> dict:
    """A suite.json as evaluate writes it: an imagenet_val report (on build ``val_sha``) plus ``reports``
    (and the attacks' accuracies ``adversarial``)."""
    datasets = {"imagenet_val": report("imagenet_val", accuracy, build(val_sha)), **reports}
    suite = {
        "format": FORMAT,
        "model": model,
        "weights": "none (seed 0)",
        "weights_sha256": None,
        "params": 1000,
        "imagenet_suite": "0.1.0",
        "datasets": datasets,
        "skipped": {},
        "summary": suite_summary(datasets, params_millions=0.001, adversarial=adversarial),
    }
    if legacy:  # as written before suite.json had a format: no format, no provenance
        del suite["format"]
        for entry in datasets.values():
            del entry["provenance"]
    return suite


def write_run(root: Path, name: str, suite: dict) -> Path:
    run = root / name
    run.mkdir()
    (run / "suite.json").write_text(json.dumps(suite))
    return run


def leaderboard(root: Path, *runs: Path, flags: tuple[str, ...] = ()) -> list[str]:
    return ["leaderboard", *map(str, runs), "--out", str(root / "board"), *flags]


def test_runs_on_the_same_builds_are_ranked(tmp_path, capsys):
    runs = [write_run(tmp_path, f"m{i}", suite_json(f"timm:m{i}", 0.5 + i / 10)) for i in range(2)]
    assert cli.main(leaderboard(tmp_path, *runs)) == 0
    text = (tmp_path / "board" / "leaderboard.md").read_text()
    assert "| timm:m1 |" in text and "Mixed builds" not in text
    assert capsys.readouterr().out.strip().splitlines()[-1] == str(tmp_path / "board" / "leaderboard.md")


def _set(path: tuple, value):
    def mutate(suite: dict) -> None:
        *parents, last = path
        node = suite
        for key in parents:
            node = node[key]
        node[last] = value

    return mutate


def _delete(*path):
    def mutate(suite: dict) -> None:
        *parents, last = path
        node = suite
        for key in parents:
            node = node[key]
        del node[last]

    return mutate


ACC = ("summary", "accuracies", "imagenet_val", "value")
BAD_SUITES = {
    "another layout (KeyError 'quba' before)": (
        _delete("summary", "quba"),
        r"summary\.quba: missing; expected an object$",
    ),
    "an unknown format": (
        _set(("format",), 7),
        r'format is the number 7, but imagenet-suite \S+ reads suite\.json of format "imagenet-suite\.suite/4", '
        r'"imagenet-suite\.suite/3" or "imagenet-suite\.suite/2" \(or without one, as written before formats\)$',
    ),
    "an accuracy held as a string": (
        _set(ACC, "0.5"),
        r'summary\.accuracies\["imagenet_val"\]\.value: expected a number in \[0, 1\], found the string "0\.5"$',
    ),
    "a boolean for a number": (
        _set(("summary", "quba", "dimensions", "accuracy", "value"), True),
        r"summary\.quba\.dimensions\[\"accuracy\"\]\.value: expected a number in \[0, 1\], found true \(a boolean\)$",
    ),
    "a metric row value as a string": (
        _set(("datasets", "imagenet_val", "metrics", 0, "value"), "high"),
        r'datasets\["imagenet_val"\]\.metrics\[0\]\.value: expected a finite number or null, found the string "high"$',
    ),
    "NaN where a finite number is expected": (
        _set(ACC, float("nan")),
        r'summary\.accuracies\["imagenet_val"\]\.value: expected a number in \[0, 1\], found NaN$',
    ),
    "a fractional parameter count": (
        _set(("params",), 1.5),
        r"params: expected an integer >= 0, found the number 1\.5$",
    ),
    "a report without provenance": (
        _delete("datasets", "imagenet_val", "provenance"),
        r'datasets\["imagenet_val"\]\.provenance: missing; expected an object$',
    ),
    "a build sha256 that is not one": (
        _set(("datasets", "imagenet_val", "provenance", "dataset", "build_info_sha256"), "abc"),
        r'datasets\["imagenet_val"\]\.provenance\.dataset\.build_info_sha256: expected a sha256 \(64 lowercase hex '
        r'digits\), found the string "abc"$',
    ),
    "an unknown QUBA dimension": (
        _set(("summary", "quba", "missing", "speed"), "needs a stopwatch"),
        r'summary\.quba\.missing\["speed"\]: expected a key among \[.*\], found another key$',
    ),
    "a list of reports instead of an object": (
        _set(("datasets",), []),
        r"datasets: expected an object, found a list of 0$",
    ),
    "an interval that is not [low, high]": (
        _set(
            ("summary", "uncertainty"),
            {
                "method": "percentile bootstrap over images",
                "resamples": 10,
                "seed": 0,
                "no_interval": {},
                "ci95": {"quba.score": [0.1, 0.2, 0.3]},
                "samples": {},
                "files": {"replicates": None, "correct": {}},
            },
        ),
        r'summary\.uncertainty\.ci95\["quba\.score"\]: expected a list of 2 of a finite number, found a list of 3$',
    ),
}


@pytest.mark.parametrize("case", list(BAD_SUITES))
def test_a_bad_suite_json_is_one_line_naming_the_file_and_json_path(case, tmp_path, capsys):
    mutate, expected = BAD_SUITES[case]
    good = write_run(tmp_path, "good", suite_json("timm:good", 0.6))
    suite = suite_json("timm:bad", 0.5)
    mutate(suite)
    bad = write_run(tmp_path, "bad", suite)
    line = one_line(capsys, leaderboard(tmp_path, good, bad))
    assert re.search(re.escape(str(bad / "suite.json")) + ": " + expected, line), line
    assert not (tmp_path / "board").exists()


def test_a_top_level_that_is_not_an_object_is_named(tmp_path, capsys):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "suite.json").write_text("[1, 2]")
    line = one_line(capsys, leaderboard(tmp_path, tmp_path / "run"))
    assert line.endswith(
        "suite.json: not a suite.json of `imagenet-suite evaluate` (expected an object, found a list of 2)"
    )


def test_a_suite_json_written_before_formats_is_read(tmp_path, capsys):
    legacy = write_run(tmp_path, "legacy", suite_json("timm:old", 0.5, legacy=True))
    assert cli.main(leaderboard(tmp_path, legacy)) == 0, capsys.readouterr().err
    legacy_bad = suite_json("timm:old", 0.5, legacy=True)
    legacy_bad["summary"]["accuracies"]["imagenet_val"]["value"] = "0.5"  # the same checks, without provenance
    bad = write_run(tmp_path, "legacy-bad", legacy_bad)
    assert 'accuracies["imagenet_val"].value: expected a number in [0, 1]' in one_line(
        capsys, leaderboard(tmp_path, bad)
    )


def test_runs_on_different_builds_are_refused_unless_allowed(tmp_path, capsys):
    a = write_run(tmp_path, "a", suite_json("timm:a", 0.5, SHA_A))
    b = write_run(tmp_path, "b", suite_json("timm:b", 0.6, SHA_B))
    c = write_run(tmp_path, "c", suite_json("timm:c", 0.7, SHA_A))
    line = one_line(capsys, leaderboard(tmp_path, a, b, c))
    assert line.endswith(
        "the runs read different builds of imagenet_val (config default, split validation): build_info.json "
        "sha256 aaaaaaaaaaaa in 'timm:a', 'timm:c'; build_info.json sha256 bbbbbbbbbbbb in 'timm:b'; pass "
        "--allow-mixed-builds to rank them anyway"
    ), line
    assert not (tmp_path / "board").exists()
    assert cli.main(leaderboard(tmp_path, a, b, c, flags=("--allow-mixed-builds",))) == 0
    text = (tmp_path / "board" / "leaderboard.md").read_text()
    assert text.index("## Mixed builds") < text.index("## QUBA")
    assert (
        "- `imagenet_val` config `default` split `validation`: build_info.json sha256 aaaaaaaaaaaa: `timm:a`, "
        "`timm:c`; build_info.json sha256 bbbbbbbbbbbb: `timm:b`"
    ) in text


def test_an_ood_set_scored_against_other_id_outputs_is_a_mixed_build(tmp_path, capsys):
    o = build("c" * 64, "imagenet_o")
    a = write_run(
        tmp_path, "a", suite_json("timm:a", 0.5, SHA_A, imagenet_o=report("imagenet_o", 0.1, o, build(SHA_A)))
    )
    b = suite_json("timm:b", 0.6, SHA_A, imagenet_o=report("imagenet_o", 0.2, o, build(SHA_B)))
    del b["datasets"]["imagenet_val"]  # the ImageNet-val build shows only as the OOD set's ID outputs
    b["summary"] = suite_summary(b["datasets"], params_millions=0.001)
    line = one_line(capsys, leaderboard(tmp_path, a, write_run(tmp_path, "b", b)))
    assert "different builds of imagenet_val (config default, split validation)" in line
    assert "aaaaaaaaaaaa in 'timm:a'; build_info.json sha256 bbbbbbbbbbbb in 'timm:b'" in line


def test_a_run_without_recorded_builds_is_not_silently_mixed(tmp_path, capsys):
    legacy = write_run(tmp_path, "legacy", suite_json("timm:old", 0.5, legacy=True))
    new = write_run(tmp_path, "new", suite_json("timm:new", 0.6))
    line = one_line(capsys, leaderboard(tmp_path, legacy, new))
    assert "a build not recorded (suite.json without provenance) in 'timm:old'" in line
    assert cli.main(leaderboard(tmp_path, legacy, new, flags=("--allow-mixed-builds",))) == 0


# ---------------------------------------------------------------------------------------------- evaluate


@pytest.fixture(scope="module")
def builds(tmp_path_factory) -> dict[str, Path]:
    """Two builds of imagenet_val: the same four ids, other images and labels."""
    root = tmp_path_factory.mktemp("two-builds")
    folders = {}
    for name, seed in (("a", 0), ("b", 1)):
        manual = val_fx.write_tar_layout(root / f"src-{name}", val_fx.make_val_images(4, seed=seed))
        folders[name] = build_dataset(
            "imagenet_val", root / name, ["default"], options=BuildOptions(manual_dir=manual, pins=read_pins_file(manual / "checksums.tsv"), offline=True, progress=False),
        )  # fmt: skip
    return folders


def evaluate(dataset: Path, out: Path, *extra: str, weights: str = "none") -> list[str]:
    """``evaluate`` of the tiny model, without the bootstrap (its 1,000 resamples are not what these tests check)."""
    return ["evaluate", "--model", MODEL, "--weights", weights, "--datasets", str(dataset), "--out", str(out),
            "--batch-size", "4", "--workers", "0", "--no-progress", "--bootstrap", "0", *extra]  # fmt: skip


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_every_report_names_the_dataset_build_it_read(builds, tmp_path, capsys):
    assert cli.main(evaluate(builds["a"], tmp_path / "run")) == 0
    suite = json.loads((tmp_path / "run" / "suite.json").read_text())
    assert suite["format"] == WRITTEN_FORMAT
    expected = {
        "folder": str(builds["a"].resolve()),
        "builder": "imagenet_val",
        "version": "1.0.0",
        "config": "default",
        "split": "validation",
        "build_info_sha256": sha256_file(builds["a"] / "build_info.json"),
    }
    provenance = suite["datasets"]["imagenet_val"]["provenance"]
    assert provenance == {"dataset": expected, "outputs": expected, "id_outputs": None}
    record = json.loads((tmp_path / "run" / "builds" / "imagenet_val.json").read_text())
    assert record["dataset"] == expected
    markdown = (tmp_path / "run" / "suite.md").read_text()
    assert (
        f"| imagenet_val | imagenet_val | 1.0.0 | default/validation | {expected['build_info_sha256'][:12]} |"
        in markdown
    )


def test_outputs_predicted_from_another_build_are_not_reused(builds, tmp_path, capsys):
    run = tmp_path / "run"
    assert cli.main(evaluate(builds["a"], run)) == 0
    before = snapshot(run)
    line = one_line(capsys, evaluate(builds["b"], run))
    sha_a, sha_b = (sha256_file(builds[n] / "build_info.json")[:12] for n in "ab")
    assert line.endswith(
        f"{run / 'outputs' / 'imagenet_val.pt'}: predicted from another build of imagenet_val 1.0.0 (config "
        f"default, split validation): build_info.json sha256 {sha_a} in {builds['a'].resolve()}, now {sha_b} in "
        f"{builds['b'].resolve()}; delete it to predict again, or choose another --out"
    ), line
    assert snapshot(run) == before
    (run / "outputs" / "imagenet_val.pt").unlink()  # the way out the message names
    assert cli.main(evaluate(builds["b"], run)) == 0
    suite = json.loads((run / "suite.json").read_text())
    assert suite["datasets"]["imagenet_val"]["provenance"]["dataset"]["build_info_sha256"][:12] == sha_b


def test_outputs_without_a_record_of_their_build_are_refused(builds, tmp_path, capsys):
    run = tmp_path / "run"
    assert cli.main(evaluate(builds["a"], run)) == 0
    (run / "builds" / "imagenet_val.json").unlink()  # as in a run folder of an older imagenet-suite
    line = one_line(capsys, evaluate(builds["a"], run))
    assert f"{run / 'outputs' / 'imagenet_val.pt'}: no record of the dataset build it was predicted from" in line


def _weights_file(path: Path, seed: int) -> Path:
    torch.save(load_model(MODEL, "none", seed=seed).model.state_dict(), path)
    return path


def test_a_run_folder_of_other_weights_names_what_differs(builds, tmp_path, capsys):
    run = tmp_path / "run"
    assert cli.main(evaluate(builds["a"], run)) == 0
    line = one_line(capsys, evaluate(builds["a"], run, "--seed", "1"))
    assert line.endswith(
        f"--out {run} holds the run of {MODEL}, not of this model: weights none (seed 0) there, none (seed 1) now; "
        "choose another --out"
    ), line
    w0, w1 = _weights_file(tmp_path / "w0.pth", 0), _weights_file(tmp_path / "w1.pth", 1)
    files = tmp_path / "run-files"
    assert cli.main(evaluate(builds["a"], files, weights=str(w0))) == 0
    line = one_line(capsys, evaluate(builds["a"], files, weights=str(w1)))
    assert f"weights {w0} (sha256 {sha256_file(w0)[:12]}) there, {w1} (sha256 {sha256_file(w1)[:12]}) now" in line, line
    w1.write_bytes(w0.read_bytes())  # another file with the same bytes: the same weights (their sha256)
    assert cli.main(evaluate(builds["a"], files, weights=str(w1))) == 0


def test_a_run_json_written_before_formats_is_read_and_compared(builds, tmp_path, capsys):
    run = tmp_path / "run"
    assert cli.main(evaluate(builds["a"], run)) == 0
    manifest = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({"model": MODEL, "weights": manifest["weights_digest"]}))
    assert cli.main(evaluate(builds["a"], run)) == 0  # same model: accepted, rewritten in the current layout
    assert json.loads((run / "run.json").read_text()) == manifest
    (run / "run.json").write_text(json.dumps({"model": MODEL, "weights": "0" * 64}))
    line = one_line(capsys, evaluate(builds["a"], run))
    assert (
        "weights of digest 000000000000 (a run.json of an older imagenet-suite names no more) there, none (seed 0) now"
        in line
    )


ATTACKS = {"requested_rows": 2, "seed": 0, "batch_size": 4, "rows": 2, "attack": "FGSM, PGD", "ids": ["a", "b"]}
ATTACKS |= {"clean_accuracy": 0.5, "fgsm_accuracy": 0.0, "pgd_accuracy": 0.0}
AUTOATTACK = {"accuracy": 0.0, "norm": "Linf", "eps": 4 / 255, "version": "standard", "attacks": ["apgd-ce"]}
AUTOATTACK |= {"iterations": 100, "queries": 5000, "library": "pyautoattack 0.2.0"}
BAD_RUN_FILES = {
    "suite.json of an unknown format": (
        "suite.json",
        lambda suite: json.dumps({**suite, "format": "imagenet-suite.suite/9"}),
        r'suite\.json: format is the string "imagenet-suite\.suite/9", but imagenet-suite \S+ reads suite\.json',
    ),
    "suite.json with an accuracy as a string": (
        "suite.json",
        lambda suite: json.dumps(_with(suite, ("summary", "quba", "dimensions", "accuracy", "value"), "0.25")),
        r'suite\.json: summary\.quba\.dimensions\["accuracy"\]\.value: expected a number in \[0, 1\], found the string',
    ),
    "run.json that is not JSON": ("run.json", lambda suite: "{model", r"run\.json: not a readable run\.json"),
    "run.json of an unknown format": (
        "run.json",
        lambda suite: json.dumps({"format": "imagenet-suite.run/3", "model": MODEL}),
        r'run\.json: format is the string "imagenet-suite\.run/3", but this imagenet-suite reads run\.json',
    ),
    "adversarial.json with an accuracy as a string": (
        "adversarial.json",
        lambda suite: json.dumps({**ATTACKS, "clean_accuracy": "0.5"}),
        r"adversarial\.json: clean_accuracy: expected a number in \[0, 1\], found the string \"0\.5\"",
    ),
    "adversarial.json with an AutoAttack of an unknown norm": (
        "adversarial.json",
        lambda suite: json.dumps({**ATTACKS, "autoattack": {"autoattack-linf": {**AUTOATTACK, "norm": "L3"}}}),
        r'adversarial\.json: autoattack\["autoattack-linf"\]\.norm: expected one of \[\'Linf\', \'L2\', \'L1\'\], '
        r'found the string "L3"',
    ),
    "a file where the attacks keep their finished batches": (
        "adversarial.partial",
        lambda suite: "not a folder",
        r"adversarial\.partial: in the way \(the attacks keep their finished batches there\)",
    ),
    "an outputs record of another layout": (
        "builds/imagenet_val.json",
        lambda suite: json.dumps({"format": "imagenet-suite.outputs-record/2", "key": "imagenet_val"}),
        r"builds/imagenet_val\.json: dataset: missing; expected an object",
    ),
    "an outputs record without the file's sha256 (of an older imagenet-suite)": (
        "builds/imagenet_val.json",
        lambda suite: json.dumps({"format": "imagenet-suite.outputs-record/1", "key": "imagenet_val"}),
        r"outputs/imagenet_val\.pt: its record \S+/builds/imagenet_val\.json \(imagenet-suite\.outputs-record/1, a "
        r"run folder of an older imagenet-suite\) holds no sha256 of it, so it cannot be verified; delete it to "
        r"predict again, or choose another --out$",
    ),
}


def _with(suite: dict, path: tuple, value) -> dict:
    suite = copy.deepcopy(suite)
    _set(path, value)(suite)
    return suite


@pytest.mark.parametrize("case", list(BAD_RUN_FILES))
def test_evaluate_checks_an_existing_run_folder_before_any_work(case, builds, tmp_path, capsys, monkeypatch):
    name, content, expected = BAD_RUN_FILES[case]
    run = tmp_path / "run"
    assert cli.main(evaluate(builds["a"], run)) == 0
    (run / name).write_text(content(json.loads((run / "suite.json").read_text())))
    before = snapshot(run)
    line = one_line(capsys, evaluate(builds["a"], run, "--adversarial", "2"))
    assert re.search(re.escape(str(run)) + "/" + expected, line), line
    assert snapshot(run) == before


BAD_ARGUMENTS = {
    "--workers": (("--workers", "-1"), r"--workers must be 0 or more, got -1"),
    "--batch-size": (("--batch-size", "0"), r"--batch-size must be at least 1, got 0"),
    "--adversarial": (("--adversarial", "-2"), r"--adversarial must be 0 \(no attacks\) or a number of images, got -2"),
    "--adversarial-seed": (("--adversarial", "2", "--adversarial-seed", "-1"), r"--adversarial-seed must be 0 or more"),
    "--num-proc": (("--num-proc", "0"), r"--num-proc must be ≥ 1, got 0"),
    "--detector-stats": (("--detector-stats", "{root}/none.pt"), r"--detector-stats \S+/none\.pt: no such file"),
}


@pytest.mark.parametrize("case", list(BAD_ARGUMENTS))
def test_bad_arguments_stop_evaluate_before_any_work(case, builds, tmp_path, capsys):
    extra, expected = BAD_ARGUMENTS[case]
    out = tmp_path / "run"
    line = one_line(capsys, evaluate(builds["a"], out, *(e.format(root=tmp_path) for e in extra)))
    assert re.search(expected, line), line
    assert not out.exists() and not list(tmp_path.iterdir())  # no run folder, no <out>.partial


def test_out_that_is_a_file_stops_evaluate_before_any_work(builds, tmp_path, capsys):
    out = tmp_path / "a-file"
    out.write_text("x")
    line = one_line(capsys, evaluate(builds["a"], out))
    assert line.endswith(f"--out {out}: is a file; expected a run folder")
    assert out.read_text() == "x"
