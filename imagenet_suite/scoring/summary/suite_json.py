"""suite.json, the file ``evaluate`` writes in a run folder: its name (:data:`SUITE_JSON`), its formats, its
structure (:data:`SUITE_SCHEMAS`, with the schemas of its parts: :data:`BUILD`, :data:`ADVERSARIAL`,
:data:`WEIGHTS_SOURCE`, :data:`HIERARCHY`, :data:`UNCERTAINTY`, ...), reading it back, and its weights in
one phrase (:func:`weights_label`).

Reading a suite.json back (:func:`read_suite`, used by ``leaderboard`` and by ``evaluate`` on an existing
run folder): its ``format`` must be :data:`SUITE_FORMAT` (each report's metric rows stored as columns,
:mod:`~imagenet_suite.scoring.summary.metric_columns`), :data:`SUITE_FORMAT_3` (the same, the rows a list of
objects), :data:`SUITE_FORMAT_2` (as 3 but ``weights_source``: the weights tag is unknown) or absent, the layout
imagenet-suite wrote before it had one (also reports without ``provenance``: the builds they read are unknown) —
and its structure must match :data:`SUITE_SCHEMAS` (checked with :mod:`imagenet_suite.scoring.summary.json_schema`).
A mismatch is one :class:`~imagenet_suite.errors.RunFolderError` line naming the file, the JSON path
(``datasets["imagenet_val"].metrics.value[0]``; ``metrics[0].value`` before format 4) and what was expected.
Whatever the format, :func:`read_suite` returns each report's ``metrics`` as a list of row objects;
:func:`suite_file_bytes` writes a suite the way ``evaluate`` does.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import partial
from pathlib import Path
from typing import Any

from ... import __version__
from ...errors import RunFolderError
from ...forked import mapping_forked
from ..metrics.quba import ATTACK_CONVENTIONS, DIMENSIONS
from .column_rows import ColumnRows
from .json_schema import (
    COUNT,
    FRACTION,
    NON_NEGATIVE,
    NUMBER,
    ROUNDING,
    SHA256,
    TEXT,
    Boolean,
    Fields,
    ListOf,
    MapOf,
    Maybe,
    Mismatch,
    Number,
    Text,
    check_json,
    describe_json,
    json_path,
    parse_json_path,
    read_json,
    schema_at,
)
from .metric_columns import MetricColumns, columns_to_rows, rows_to_columns
from .metric_ranges import DIMENSION_RANGES, MetricRows, MetricRowSchema, expert_label_range, intern_rows, lca_range
from .suite_holding import KEEP_ALL, Holding, share_records

SUITE_JSON = "suite.json"
SUITE_FORMAT = "imagenet-suite.suite/4"
"""``format`` of the suite.json written now: layout 3 with each report's ``metrics`` as columns (one list per
field of :data:`~imagenet_suite.scoring.summary.metric_columns.METRIC_KEYS`). Layouts 3, 2 and 1 (no ``format``
key, before formats) are read too."""
SUITE_FORMAT_3 = "imagenet-suite.suite/3"
"""Layout 2 plus ``weights_source`` (the weights tag and where the weights came from)."""
SUITE_FORMAT_2 = "imagenet-suite.suite/2"


BUILD = Fields(
    {
        "folder": TEXT,
        "builder": TEXT,
        "version": TEXT,
        "config": TEXT,
        "split": TEXT,
        "build_info_sha256": SHA256,
    }
)
"""One build of a dataset split: the folder read, the build's identity, the sha256 of its build_info.json."""
METRIC_ROW = MetricRowSchema()
"""A report row, its value in its metric's range (:mod:`~imagenet_suite.scoring.summary.metric_ranges`)."""


class ReliabilityBins(Fields):
    """A report's ``reliability[convention]`` (``CalibrationBins.to_json``): five lists of one length, edges in
    [0, 1], counts ≥ 0, ``correct`` ≤ ``count`` and ``confidence_sum`` ≤ ``count`` in every bin."""

    def __init__(self) -> None:
        counts, edges = ListOf(COUNT), ListOf(FRACTION)
        super().__init__({"lower": edges, "upper": edges, "count": counts, "correct": counts,
                          "confidence_sum": ListOf(NON_NEGATIVE)})  # fmt: skip

    def check(self, value: Any, path: str) -> None:
        super().check(value, path)
        lengths = {key: len(value[key]) for key in self.required}
        if len(set(lengths.values())) != 1:
            raise Mismatch(path, "bin lists of one length", f"lengths {lengths}")
        for i, count in enumerate(value["count"]):
            for key, slack in (("correct", 0), ("confidence_sum", ROUNDING * (1 + count))):
                if value[key][i] > count + slack:
                    raise Mismatch(
                        json_path(path, key) + f"[{i}]", f"at most the bin's count {count}", str(value[key][i])
                    )


REPORT_1 = Fields(
    {"meta": Fields({"dataset": TEXT, "config": TEXT, "split": TEXT}), "metrics": MetricRows(METRIC_ROW)},
    {"reliability": MapOf(ReliabilityBins())},  # the calibration family's bins, written since issue #39
)
PROVENANCE = Fields({"dataset": BUILD, "outputs": BUILD, "id_outputs": Maybe(BUILD)})
"""What a report was computed from: the split scored, the split whose outputs were scored (ImageNet val's
for a labels-only config), and the ImageNet-val outputs an OOD set was scored against (else null)."""
REPORT_2 = REPORT_1.extended(provenance=PROVENANCE)
AUTOATTACK = Fields(
    {
        "accuracy": FRACTION,
        "norm": Text(choices=("Linf", "L2", "L1")),
        "eps": NON_NEGATIVE,
        "version": TEXT,
        "attacks": ListOf(TEXT),
        "iterations": COUNT,
        "queries": COUNT,
        "library": TEXT,
    }
)
"""One AutoAttack of adversarial.json: its robust accuracy and what it was run with."""
ADVERSARIAL = Fields(
    {
        "requested_rows": Number(integer=True, minimum=1),
        "seed": COUNT,
        "batch_size": Number(integer=True, minimum=1),
        "rows": COUNT,
        "clean_accuracy": FRACTION,
        "attack": TEXT,
        "ids": ListOf(TEXT),
    },
    {
        "fgsm_accuracy": FRACTION,
        "pgd_accuracy": FRACTION,
        "attack_convention": Text(choices=tuple(ATTACK_CONVENTIONS)),
        "dataset": BUILD,
        "autoattack": MapOf(AUTOATTACK),
        "correct": MapOf(Text(pattern="[01]*", what="a string of 0s and 1s"), ("clean", "fgsm", "pgd")),
    },
)
"""adversarial.json (and ``summary.adversarial``); ``fgsm_accuracy``/``pgd_accuracy``: when those attacks ran
(always, in files written before ``--attack``); ``attack_convention``: where FGSM and PGD perturbed
(``hesse2025``: the model's normalised inputs, Beyond Accuracy's protocol, the only one QUBA's adversarial
dimension takes; ``pixel``: [0, 1] pixels; absent in files written before conventions were recorded,
which attacked in pixels: :func:`~imagenet_suite.scoring.summary.quba.attack_convention_of`); ``autoattack``: per AutoAttack perturbation type
(``autoattack-linf``, ``autoattack-l2:eps=0.5``, ...) its :data:`AUTOATTACK` entry; ``dataset``: the
ImageNet-val build attacked (absent in files written before builds were recorded); ``correct``: per
attacked image (in ``ids`` order) whether the model was right, ``1``/``0``, clean and under FGSM and PGD
(absent in files written before intervals)."""
WEIGHTS_LIBRARIES = ("torchvision", "timm", "open_clip")
"""Model libraries whose pretrained tags a run can name (``open_clip``: zero-shot vision-language models)."""
WEIGHTS_KINDS = (*WEIGHTS_LIBRARIES, "file", "none")
"""Where a run's weights came from: a library tag's pretrained weights, a file, or a random init."""
WEIGHTS_SOURCE = Fields(
    {
        "kind": Text(choices=WEIGHTS_KINDS),
        "library": Maybe(Text(choices=WEIGHTS_LIBRARIES)),
        "architecture": TEXT,
        "tag": Maybe(TEXT),
        "requested": Maybe(TEXT),
        "loaded": Boolean(),
        "location": Maybe(TEXT),
        "seed": Maybe(Number(integer=True)),
    },
    {"family": Maybe(TEXT), "pretraining": Maybe(TEXT)},  # absent in files written before they were recorded
)
"""Which weights a run used (``imagenet_suite.inference.models.WeightsSource.record``): ``kind`` (the tag's
pretrained weights from ``torchvision``, ``timm`` or ``open_clip``, a ``file``, or ``none``: a random init from ``seed``),
the library's ``architecture`` and the weights ``tag`` the spec resolved to (``requested``: as the spec
wrote it, null when it wrote none and the library's default was taken; ``loaded``: whether the tag's
weights are the ones loaded, false with a file or a random init, where the tag chose the architecture's
configuration and preprocessing only), and ``location`` (the URL, ``hf-hub:<repo id>`` or the file); optional
(absent in files written before): ``family`` and ``pretraining``, the architecture family and the pretraining
data the library states for the architecture and tag (``imagenet_suite.inference.library_tags.library_metadata``:
timm's module of the entrypoint and the data its tag names, torchvision's builder module and weights enum member,
open_clip's architecture and pretrained tag; null for a user model), which ``leaderboard`` groups models by
without ``--groups`` (:func:`imagenet_suite.scoring.summary.groups.metadata_groups`)."""
HIERARCHY = Fields(
    {
        "kind": Text(choices=("wordnet", "kmeans")),
        "build": Maybe(BUILD),
        "shipped_sha256": Maybe(SHA256),
        "paper_distance": TEXT,
    },
    {
        "seed": Maybe(Number(integer=True)),
        "sources": Maybe(MapOf(Fields({}, {"file": Maybe(TEXT), "sha256": Maybe(SHA256)}))),
        "paper_distances": MapOf(TEXT),
    },
)
"""The hierarchy of a run's LCA distances (``imagenet_suite.scoring.metrics.lca_distances.hierarchy_record``):
its ``kind``, its ``build`` (null: the WordNet tree shipped with the package, its nodes CSV's sha256 in
``shipped_sha256``), the build's ``seed``, ``options`` and ``sources``, ``paper_distance``, the distance
LCA-on-the-Line (Shi et al. 2024) reports with that kind of hierarchy, and ``paper_distances`` (``{OOD builder:
distance}``, absent in runs before it was recorded), the OOD sets the paper predicts with the ImageNet LCA in
another distance (WordNet: ``depth_two_sided`` for ImageNet-Sketch and ImageNet-A, App. E.2)."""
FILE_RECORD = Fields({"path": TEXT, "sha256": SHA256})
"""A file of the run folder (its path relative to the folder) and its sha256."""
UNCERTAINTY = Fields(
    {
        "method": TEXT,
        "resamples": Number(integer=True, minimum=1),
        "seed": COUNT,
        "ci95": MapOf(ListOf(NUMBER, length=2)),
        "no_interval": MapOf(TEXT),
        "samples": MapOf(ListOf(Fields({"rows": COUNT, "ids_sha256": SHA256}))),
        "files": Fields({"replicates": FILE_RECORD, "correct": MapOf(FILE_RECORD.extended(rows=COUNT))}),
    }
)
"""``summary.uncertainty`` (:mod:`imagenet_suite.scoring.summary.intervals`): the bootstrap's ``method``,
``resamples`` and ``seed``; ``ci95``: ``{JSON path of a number in summary: [low, high]}``; ``no_interval``:
``{JSON path: why it has none}``; ``samples``: per report key (and ``adversarial``: the attacked images),
the sets of images it was resampled over (rows, sha256 of the sorted ids); ``files``: the replicates and, per dataset key, the per-image correctness
of its headline accuracy, each with its sha256."""
BENCHMARK_ROW = Fields(
    {
        "set": TEXT,
        "fpr95_openood_v15": FRACTION,
        "auroc": FRACTION,
        "aupr_in": FRACTION,
        "aupr_out": FRACTION,
        "fpr95": FRACTION,
        "acc": Maybe(FRACTION),
    }
)
BENCHMARK = Fields(
    {
        "benchmark": TEXT,
        "id": Fields({"rows": COUNT, "accuracy": Maybe(FRACTION), "build": BUILD, "split": BUILD}),
        "sets": MapOf(Fields({"group": TEXT, "rows": COUNT, "build": BUILD})),
        "detectors": MapOf(ListOf(BENCHMARK_ROW)),
    },
    {"citation": TEXT},
)
"""``summary.benchmarks[NAME]`` (:func:`imagenet_suite.inference.benchmark.run_benchmark`): the ID images (rows,
top-1, the val build and the build of the split), each OOD set (group, rows, build) and per detector the rows
of :func:`imagenet_suite.scoring.benchmarks.benchmark_table` (fractions)."""
DIMENSION = {
    name: Fields({"value": value, "sources": ListOf(TEXT), "note": TEXT}) for name, value in DIMENSION_RANGES.items()
}
"""``summary.quba.dimensions[NAME]``: the dimension's value in its range, the reports it came from, a note."""
SUMMARY = Fields(
    {
        "quba": Fields(
            {
                "score": Maybe(NUMBER),
                "dimensions": MapOf(Fields({"value": NUMBER}), DIMENSIONS, DIMENSION.get),
                "missing": MapOf(TEXT, DIMENSIONS),
                "weights": MapOf(NUMBER, DIMENSIONS),
            },
            {"partial": MapOf(TEXT, DIMENSIONS), "probabilities": TEXT},  # probabilities: a zero-shot model's
        ),
        "adversarial": Maybe(ADVERSARIAL),
        "imagenet_c": Maybe(
            Fields(
                {
                    "mce": NON_NEGATIVE,
                    "relative_mce": Maybe(NUMBER),
                    "sets": COUNT,
                    "corruptions": MapOf(
                        Fields({"accuracy": FRACTION, "ce": NON_NEGATIVE}, {"relative_ce": Maybe(NUMBER)})
                    ),
                    "sources": ListOf(TEXT),
                }
            )
        ),
        "ninco": Maybe(
            MapOf(
                Fields(
                    {},
                    {
                        "source": TEXT,
                        "mean_auroc": Maybe(FRACTION),
                        "mean_fpr95": Maybe(FRACTION),
                        "unit_tests_failed": Fields(
                            {"failed": Maybe(COUNT), "of": Maybe(COUNT), "rule": TEXT, "source": TEXT}
                        ),
                    },
                )
            )
        ),
        "real": Maybe(Fields({"real_top1_accuracy": FRACTION, "real_top5_accuracy": Maybe(FRACTION), "source": TEXT})),
        "expert_labels": Maybe(MapOf(MapOf(FRACTION, by_key=expert_label_range))),
        "asma": MapOf(MapOf(FRACTION)),
        "lca": MapOf(MapOf(NON_NEGATIVE, by_key=lca_range)),
        "accuracies": MapOf(Fields({"metric": TEXT, "value": FRACTION}, {"clean_accuracy": FRACTION})),
    },
    {  # absent in files written before
        "anzaku2024": Maybe(MapOf(MapOf(FRACTION))),
        "benchmarks": Maybe(MapOf(BENCHMARK)),
        "ninco_cleaning": Maybe(
            MapOf(MapOf(MapOf(Fields({"fpr95": FRACTION, "auroc": FRACTION}, {"rows": Maybe(COUNT)}))))
        ),
        "protocols": MapOf(TEXT),
        "uncertainty": Maybe(UNCERTAINTY),
        "quba_autoattack": Fields(
            {
                "score": Maybe(NUMBER),
                "adversarial_robustness": Maybe(NON_NEGATIVE),
                "missing": MapOf(TEXT, DIMENSIONS),
                "note": TEXT,
            },
            {"partial": MapOf(TEXT, DIMENSIONS)},
        ),
    },
)
SUITE_1 = Fields(
    {
        "model": TEXT,
        "weights": TEXT,
        "weights_sha256": Maybe(SHA256),
        "params": COUNT,
        "imagenet_suite": TEXT,
        "datasets": MapOf(REPORT_1),
        "skipped": MapOf(TEXT),
        "summary": SUMMARY,
    },
    {"hierarchy": Maybe(HIERARCHY)},  # absent in suite.json written before hierarchies were recorded
)
SUITE_2 = SUITE_1.extended(format=Text(choices=(SUITE_FORMAT_2,)), datasets=MapOf(REPORT_2))
ZERO_SHOT = Fields(
    {
        "class_names": TEXT,
        "prompts": TEXT,
        "prompts_per_class": COUNT,
        "logit_scale": NUMBER,
        "logit_bias": Maybe(NUMBER),
        "probabilities": Text(choices=("softmax", "hesse2025")),
    }
)
"""``zero_shot`` of a suite.json: an ``open_clip:`` model's head record (``imagenet_suite.inference.zero_shot.head_record``;
absent for other models and in files written before it was recorded)."""
SUITE_3 = SUITE_2.extended(format=Text(choices=(SUITE_FORMAT_3,)), weights_source=Maybe(WEIGHTS_SOURCE))
REPORT_4 = REPORT_2.extended(metrics=MetricColumns())
"""A report of format 4: its metric rows as columns (:class:`~.metric_columns.MetricColumns`)."""
SUITE_4 = SUITE_3.extended(format=Text(choices=(SUITE_FORMAT,)), datasets=MapOf(REPORT_4))
SUITE_SCHEMAS: dict[str | None, Fields] = {
    None: SUITE_1,  # written before suite.json had a format: reports name no build
    SUITE_FORMAT_2: SUITE_2,  # reports name their builds; the weights tag is not recorded
    SUITE_FORMAT_3: Fields(SUITE_3.required, {**SUITE_3.optional, "zero_shot": ZERO_SHOT}),
    SUITE_FORMAT: Fields(SUITE_4.required, {**SUITE_4.optional, "zero_shot": ZERO_SHOT}),
}


def read_suite(path: str | Path, holding: Holding = KEEP_ALL) -> dict[str, Any]:
    """A suite.json (``path``, or the one in run folder ``path``), checked: its format is one this version
    reads and every key the summary, the Markdown and the leaderboard use is there with the right type.
    RunFolderError (one line: the file, the JSON path, what was expected) otherwise.

    Each report's ``metrics`` is returned as a list of row dicts, whatever the format, their strings interned
    (:func:`~.metric_ranges.intern_rows`). ``holding`` (:class:`~.suite_holding.Holding`) leaves out rows and
    report keys once checked (a reader that has no use for them holds none), and holds the rest compactly: the
    rows as :class:`~.column_rows.ColumnRows` (the same rows, read the same way, in a tenth of the memory) and
    equal records one object."""
    path = Path(path)
    if path.is_dir():
        path = path / SUITE_JSON
    suite = read_json(path, "suite.json of `imagenet-suite evaluate`")
    if not isinstance(suite, dict):
        raise RunFolderError(
            f"{path}: not a suite.json of `imagenet-suite evaluate` (expected an object, found {describe_json(suite)})"
        )
    if "format" in suite and (not isinstance(suite["format"], str) or suite["format"] not in SUITE_SCHEMAS):
        raise RunFolderError(
            f"{path}: format is {describe_json(suite['format'])}, but imagenet-suite {__version__} reads suite.json "
            f"of format {json.dumps(SUITE_FORMAT)}, {json.dumps(SUITE_FORMAT_3)} or {json.dumps(SUITE_FORMAT_2)} (or "
            "without one, as written before formats)"
        )
    check_json(suite, SUITE_SCHEMAS[suite.get("format")], path)
    check_intervals(suite, path)
    columns = suite.get("format") == SUITE_FORMAT
    dropped, held = holding.metrics_dropped, holding.compact
    for report in suite["datasets"].values():
        if columns:
            rows = report["metrics"]
            report["metrics"] = (ColumnRows.from_columns if held else columns_to_rows)(rows, dropped)
        else:
            kept = [row for row in report["metrics"] if row["metric"] not in dropped]
            compact = held and ColumnRows.holds_as_read(kept)  # else as read: a row may lack a field
            report["metrics"] = ColumnRows.from_rows(kept) if compact else intern_rows(kept)
        for key in holding.report_keys_dropped & report.keys():
            del report[key]
    if held:
        share_records([suite])  # within the run (its reports share preprocessing, hierarchy...): pickled once
    return suite


PARALLEL_FROM = 8
"""Fewest runs a leaderboard reads and writes with processes forked from it (:mod:`imagenet_suite.forked`): their
suite.json files (:func:`read_suites`), ``leaderboard.md`` beside ``leaderboard.html``, the page's figures. A
fork and exit of a process holding a GiB costs about 0.07 s: fewer runs are read and written in one process."""


def read_suites(
    paths: Iterable[str | Path], holding: Holding = KEEP_ALL, processes: int | None = None
) -> list[dict[str, Any]]:
    """:func:`read_suite` of each of ``paths``, in their order; :data:`PARALLEL_FROM` files or more in ``processes``
    worker processes (None: the CPUs this process may use) forked from this one
    (:func:`~imagenet_suite.forked.map_forked`: parsing and checking a suite.json holds the GIL). The content is the
    same either way (the rows' strings interned again here: one object per distinct string; with a compact
    ``holding``, equal records of all the runs one object), and so is the error: the first bad file's, in the
    order of ``paths``."""
    with reading_suites(paths, holding, processes) as suites:
        return suites()


@contextlib.contextmanager
def reading_suites(
    paths: Iterable[str | Path], holding: Holding = KEEP_ALL, processes: int | None = None
) -> Iterator[Callable[[], list[dict[str, Any]]]]:
    """:func:`read_suites`, started as the block starts (:func:`~imagenet_suite.forked.mapping_forked`), while the
    block runs: the block calls what it is given for the result, and for the error, if any."""
    paths = [Path(path) for path in paths]
    reading = partial(_read_in_worker, holding=holding)
    with mapping_forked(reading, paths, processes, least=PARALLEL_FROM) as read:

        def suites() -> list[dict[str, Any]]:
            found = read()
            if len(paths) >= PARALLEL_FROM:
                for suite in found:
                    for report in suite["datasets"].values():
                        rows = report["metrics"]
                        report["metrics"] = rows.interned() if isinstance(rows, ColumnRows) else intern_rows(rows)
            if holding.compact:
                share_records(found)
            return found

        yield suites


def _read_in_worker(path: Path, holding: Holding) -> dict[str, Any]:
    return read_suite(path, holding)  # by name (sent to the workers), as this module has it when they fork


def suite_file_bytes(suite: Mapping[str, Any]) -> bytes:
    """The bytes of ``suite`` (its reports' ``metrics`` lists of rows, as :func:`read_suite` returns them) as a
    suite.json of :data:`SUITE_FORMAT`: indented JSON, no NaN (ValueError on one: write it as null), a final
    newline; each report's rows as columns (:func:`~.metric_columns.rows_to_columns`)."""
    datasets = {
        key: {**report, "metrics": rows_to_columns(report["metrics"])} for key, report in suite["datasets"].items()
    }
    written = {**suite, "format": SUITE_FORMAT, "datasets": datasets}
    return (json.dumps(written, indent=1, allow_nan=False) + "\n").encode()


def with_rows(suite: Mapping[str, Any], where: str) -> Mapping[str, Any]:
    """``suite`` with each report's ``metrics`` a list of rows: as it is, or, for the content of a format-4 suite.json
    read without :func:`read_suite` (rows as columns), a copy with the columns checked and made rows (RunFolderError
    naming ``where`` and the JSON path on a bad one)."""
    if not any(isinstance(report.get("metrics"), dict) for report in suite.get("datasets", {}).values()):
        return suite
    datasets = {}
    for key, report in suite["datasets"].items():
        if isinstance(report.get("metrics"), dict):
            path = json_path(json_path("datasets", key, bracket=True), "metrics")
            check_json(report["metrics"], MetricColumns(), where, path)
            report = {**report, "metrics": columns_to_rows(report["metrics"])}
        datasets[key] = report
    return {**suite, "datasets": datasets}


def check_intervals(suite: Mapping[str, Any], where: str | Path) -> None:
    """RunFolderError naming ``where`` and the interval's JSON path unless every 95 % interval of
    ``summary.uncertainty.ci95`` has ``low <= high`` and both ends in the range of the number it belongs to (its
    check in :data:`SUMMARY`: an accuracy's interval lies in [0, 1]).

    Each end of a percentile bootstrap interval is a quantile of resampled values of the number, so it lies in
    the number's range; the number itself need not lie inside its interval (a statistic biased under resampling,
    such as ECE, or a handful of resamples), so that is not required.
    """
    uncertainty = suite["summary"].get("uncertainty")
    for number, (low, high) in (uncertainty or {}).get("ci95", {}).items():
        at = json_path("summary.uncertainty.ci95", number, bracket=True)
        keys = parse_json_path(number)
        check = schema_at(SUMMARY, keys) if keys is not None else None
        while isinstance(check, Maybe):
            check = check.inner
        try:
            if isinstance(check, Number):
                check.check(low, f"{at}[0]")
                check.check(high, f"{at}[1]")
            if low > high:
                raise Mismatch(at, "[low, high] with low <= high", f"[{low!r}, {high!r}]")
        except Mismatch as mismatch:
            raise RunFolderError(f"{where}: {mismatch}") from mismatch


def weights_tag_text(record: Mapping[str, Any]) -> str | None:
    """The weights tag of a ``weights_source`` record as one phrase, e.g. ``torchvision
    resnet50.IMAGENET1K_V2 (DEFAULT: no tag in the spec)`` or ``timm resnet50.a1_in1k``; None without one."""
    if record.get("tag") is None:
        return None
    text = f"{record['library']} {record['architecture']}.{record['tag']}"
    if record["library"] == "torchvision" and record.get("requested") in (None, "DEFAULT"):
        text += " (DEFAULT" + (": no tag in the spec)" if record.get("requested") is None else ")")
    elif record.get("requested") is None:
        text += f" ({record['library']}'s default tag: no tag in the spec)"
    return text


def weights_label(suite: Mapping[str, Any], sha256_digits: int | None = 12) -> str:
    """The weights of a suite.json in one phrase (suite.md, leaderboard rows): the tag and where the weights
    came from, their sha256 (``sha256_digits`` of it; None: all), and, with a file or a random init, the
    tag that chose the architecture and preprocessing. A suite.json before format 3 says the tag was not
    recorded.

    Example:
        >>> source = {"kind": "none", "library": "timm", "architecture": "test_resnet", "tag": "r160_in1k",
        ...           "requested": None, "loaded": False, "location": None, "seed": 0}
        >>> weights_label({"weights": "none (seed 0)", "weights_sha256": None, "weights_source": source})
        "none (seed 0); tag timm test_resnet.r160_in1k (timm's default tag: no tag in the spec) not loaded"
        >>> weights_label({"weights": "pretrained", "weights_sha256": None})
        'pretrained; weights tag not recorded'
    """
    sha = suite.get("weights_sha256")
    sha_text = f", sha256 {sha[:sha256_digits] if sha256_digits else sha}" if sha else ""
    source = suite.get("weights_source")
    if source is None:
        return f"{suite['weights']}{sha_text}; weights tag not recorded"
    tag = weights_tag_text(source)
    if source["loaded"]:
        return f"{tag}{sha_text}"
    label = f"none (seed {source['seed']})" if source["kind"] == "none" else f"file {source['location']}{sha_text}"
    return label + (f"; tag {tag} not loaded" if tag else "")


__all__ = [
    "ADVERSARIAL",
    "AUTOATTACK",
    "BENCHMARK",
    "BENCHMARK_ROW",
    "BUILD",
    "FILE_RECORD",
    "HIERARCHY",
    "METRIC_ROW",
    "PARALLEL_FROM",
    "PROVENANCE",
    "REPORT_1",
    "REPORT_2",
    "REPORT_4",
    "SUITE_1",
    "SUITE_2",
    "SUITE_3",
    "SUITE_4",
    "SUITE_FORMAT",
    "SUITE_FORMAT_2",
    "SUITE_FORMAT_3",
    "SUITE_JSON",
    "SUITE_SCHEMAS",
    "SUMMARY",
    "UNCERTAINTY",
    "WEIGHTS_KINDS",
    "WEIGHTS_LIBRARIES",
    "WEIGHTS_SOURCE",
    "ZERO_SHOT",
    "check_intervals",
    "read_suite",
    "read_suites",
    "reading_suites",
    "suite_file_bytes",
    "weights_label",
    "weights_tag_text",
    "with_rows",
]
