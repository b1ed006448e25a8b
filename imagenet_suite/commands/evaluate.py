"""``imagenet-suite evaluate --model MODEL --datasets DIR... --out RUN_DIR``: predict + score a model on
every built dataset, attack it, and write the seed papers' headline tables with their 95 % intervals.

Writes the run folder of :mod:`imagenet_suite.inference.evaluate` (``suite.json``, ``suite.md``, plots,
outputs and reports, reused by a second run) and prints the QUBA summary and the suite.json path. The
arguments are checked before the model is loaded, and an existing run folder before any work: each bad
one is a one-line error naming the flag or file.

``--models FILE|MODEL...`` sweeps many models (:mod:`imagenet_suite.inference.sweep`): a run folder per
model under ``--out``, ``sweep.json``, and the leaderboard in ``--out/leaderboard``; it prints each
model's status and run folder, the QUBA table and the leaderboard.md path; a model that failed is one
line on stderr, and the exit code is 1 when any did.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ._flags import rename
from .predict import add_zero_shot_arguments, resolve_device, state_weights, zero_shot_options

BENCHMARK_NAMES = ("openood-v1.5-imagenet",)  # imagenet_suite.scoring.benchmarks.BENCHMARKS, without importing torch
ATTACK_CONVENTIONS = ("hesse2025", "pixel")  # imagenet_suite.scoring.metrics.quba.ATTACK_CONVENTIONS, without NumPy


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "evaluate", help="run a model over built datasets; score each; write suite.json/suite.md (QUBA, mCE, ...)"
    )
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument(
        "--model",
        help="timm:<name>[.<tag>], torchvision:<name>[.<WEIGHTS>], <module>:<callable>, ... (as for predict)",
    )
    which.add_argument(
        "--models",
        nargs="+",
        metavar="FILE|MODEL",
        help="a sweep: a models file (a line: MODEL [weights=FILE|none] [seed=N] [detector_stats=FILE]; # comments) or models; a run "
        "folder each under --out (a finished one is skipped, the others resume), then --out/leaderboard",
    )
    parser.add_argument(
        "--datasets", type=Path, nargs="+", required=True, metavar="DIR", help="built dataset folders to evaluate on"
    )
    parser.add_argument(
        "--out",
        type=Path,
        required=True,
        metavar="RUN_DIR",
        help="run folder (created; reused); with --models the sweep folder (a run folder per model)",
    )
    parser.add_argument(
        "--weights",
        metavar="FILE|none",
        help="as for predict (default: the pretrained weights of the model's tag); with --models: for every "
        "model that names none",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the random init with --weights none")
    parser.add_argument("--device", default=None, help="cpu, cuda, cuda:1, ... (default: cuda when available)")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--workers", type=int, default=None, help="DataLoader workers (default: min(4, CPUs))")
    parser.add_argument("--amp", action="store_true", help="autocast (float16 on CUDA, bfloat16 on CPU)")
    parser.add_argument("--features", action="store_true", help="also store features: feature-based OOD detectors")
    parser.add_argument(
        "--detector-stats", type=Path, metavar="FILE", help="training statistics of the OOD detectors that need them"
    )
    parser.add_argument(
        "--adversarial",
        type=int,
        default=0,
        metavar="N",
        help="attack N seeded, class-stratified ImageNet-val images (0: no attacks; --attack says with what)",
    )
    parser.add_argument(
        "--adversarial-seed", type=int, default=0, help="seed of the attacked subset, PGD's start and AutoAttack"
    )
    parser.add_argument(
        "--attack",
        dest="attacks",
        default="fgsm,pgd",
        metavar="LIST",
        help="attacks on those images, comma-separated (default: fgsm,pgd): fgsm, pgd (Beyond Accuracy, L-inf 8/255), "
        "autoattack-linf, autoattack-l2, autoattack-l1 (AutoAttack standard at eps 4/255, 2.0, 75: Heuillet et al. "
        "2025; needs imagenet-suite[autoattack]); NAME:eps=VALUE sets an AutoAttack radius, e.g. autoattack-linf:eps=8/255",
    )
    parser.add_argument(
        "--attack-convention",
        choices=ATTACK_CONVENTIONS,
        default="hesse2025",
        help="where FGSM and PGD perturb: hesse2025 (default) = the model's normalised inputs clamped to [0,1], as "
        "Beyond Accuracy's code (Hesse et al. 2025), the scale of QUBA's mu/sigma; pixel = [0,1] pixel space (a "
        "robustness claim's threat model; no QUBA adversarial dimension). AutoAttack always runs in pixels",
    )
    parser.add_argument(
        "--protocol",
        dest="protocols",
        nargs="+",
        choices=("hesse2025", "anzaku2024"),
        default=["hesse2025", "anzaku2024"],
        metavar="NAME",
        help="evaluation protocols (default: both): hesse2025 = each model's own preprocessing with centre crop "
        "(QUBA, accuracy tables; Hesse et al. 2025); anzaku2024 = multi-label sets also resized to the input "
        "size without centre crop (ASMA; Anzaku et al. 2024, App. B), reported as <key>@anzaku2024",
    )
    parser.add_argument(
        "--hierarchy",
        type=Path,
        metavar="DIR",
        help="a built wordnet_hierarchy / kmeans_hierarchy folder over the 1000 ImageNet-1k classes for the LCA "
        "distances, recorded in suite.json (default: the WordNet tree shipped with the package)",
    )
    parser.add_argument(
        "--allow-partial",
        action="store_true",
        help="compute QUBA dimensions from partial inputs too (C-robustness from fewer than the 75 ImageNet-C "
        "sets) and mark the score partial (default: such a dimension is missing, so there is no score)",
    )
    parser.add_argument(
        "--bootstrap",
        type=int,
        default=1000,
        metavar="B",
        help="resamples of the percentile bootstrap over images behind the 95%% interval of every headline "
        "number (0: no intervals)",
    )
    parser.add_argument(
        "--bootstrap-seed", type=int, default=0, help="seed of the bootstrap resamples (equal seeds pair two runs)"
    )
    parser.add_argument(
        "--executor",
        choices=("local", "ray"),
        default="local",
        help="where the outputs are predicted: this process, or one Ray task per dataset split",
    )
    parser.add_argument("--ray-address", metavar="ADDR", help="Ray cluster (default: $RAY_ADDRESS, else a local one)")
    parser.add_argument("--num-proc", type=int, default=1, help="CPUs of the local Ray cluster")
    parser.add_argument(
        "--gpus-per-task",
        type=float,
        default=1.0,
        metavar="F",
        help="with --executor ray and --device cuda: GPUs each prediction task reserves, in (0, 1] (a fraction "
        "packs several tasks on one GPU)",
    )
    parser.add_argument(
        "--prediction-store",
        type=Path,
        metavar="DIR",
        help="where predictions are kept by image sha256, so that an image several splits hold is predicted once; "
        "runs of the same model and preprocessing may share one (default: RUN_DIR/predictions)",
    )
    parser.add_argument(
        "--dedup",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="predict each distinct image once (default); --no-dedup predicts every split in full (no store)",
    )
    parser.add_argument(
        "--benchmark",
        choices=BENCHMARK_NAMES,
        metavar="NAME",
        help="also report a fixed OOD benchmark from the datasets given: openood-v1.5-imagenet (OpenOOD v1.5's "
        "ImageNet-1k: ID = its 45,000 val test images, near-OOD SSB-hard + NINCO, far-OOD iNaturalist + Textures + "
        "OpenImage-O; needs imagenet_val, ninco and popular_ood built with OpenOOD's image lists)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    add_zero_shot_arguments(parser)
    parser.set_defaults(func=run)
    # the library's run_dir, the attacks' resume folder in it, and a sweep's folder
    rename(parser, run_dir="--out", resume="--out", out_dir="--out")


def run(args) -> int:
    from imagenet_suite.inference import load_model
    from imagenet_suite.inference.evaluate import run_suite
    from imagenet_suite.inference.suite_options import check_arguments, check_benchmark
    from imagenet_suite.inference.suite_targets import dataset_targets
    from imagenet_suite.scoring.summary.suite_json import SUITE_JSON

    if args.models is not None:
        return sweep(args)
    options = suite_options(args)
    head = zero_shot_options(args, str(options.predict.device))
    check_arguments(args.out, options)  # before the model is loaded or anything is written; run_suite checks again
    check_benchmark(dataset_targets(args.datasets), options.benchmark)
    state_weights(args.model, args.weights, args.seed)
    loaded = load_model(args.model, args.weights, seed=args.seed, zero_shot_options=head)
    suite = run_suite(loaded, args.datasets, args.out, options)
    quba = suite["summary"]["quba"]
    for name, entry in quba["dimensions"].items():
        print(f"{name:24s} {entry['value']:.6g}")
    for name, reason in quba["missing"].items():
        print(f"{name:24s} missing: {reason}")
    partial = f" (partial: {', '.join(quba['partial'])})" if quba.get("partial") else ""
    interval = ((suite["summary"].get("uncertainty") or {}).get("ci95") or {}).get("quba.score")
    ci = f" [{interval[0]:.4f}, {interval[1]:.4f}]" if interval else ""
    print(
        f"{'quba':24s} {quba['score']:.4f}{ci}{partial}" if quba["score"] is not None else f"{'quba':24s} not computed"
    )
    for name, record in (suite["summary"].get("benchmarks") or {}).items():
        print_benchmark(name, record)
    variant = suite["summary"].get("quba_autoattack")
    if variant is not None and variant["score"] is not None:
        print(f"{'quba (AutoAttack)':24s} {variant['score']:.4f}")
    print(args.out / SUITE_JSON)
    return 0


def print_benchmark(name: str, record: dict) -> None:
    """A benchmark's near/far means per detector (percent), as OpenOOD prints its table."""
    for detector, rows in record["detectors"].items():
        means = {row["set"]: row for row in rows if row["set"].endswith("ood")}
        cells = " ".join(f"{group} AUROC {100 * row['auroc']:.2f} FPR@95 {100 * row['fpr95_openood_v15']:.2f}"
                         for group, row in means.items())  # fmt: skip
        print(f"{name} {detector:20s} {cells}")


def sweep(args) -> int:
    """``evaluate --models``: every model into its run folder under ``--out``, then the leaderboard."""
    import sys

    from imagenet_suite.errors import ImagenetSuiteError
    from imagenet_suite.inference.sweep import SWEEP_JSON, read_models, run_sweep

    from ._flags import error_text

    options = suite_options(args)
    head = zero_shot_options(args, str(options.predict.device), model="")  # for each open_clip model of the sweep
    models = read_models(args.models, args.weights, args.seed, head)
    result = run_sweep(models, args.datasets, args.out, options)
    for name, record in result.record["models"].items():
        print(f"{record['status']:8s} {args.out / name}")
    for name, err in result.errors.items():
        text = error_text(err, args) if isinstance(err, ImagenetSuiteError) else result.record["models"][name]["error"]
        print(f"imagenet-suite evaluate: {result.record['models'][name]['model']} failed: {text}", file=sys.stderr)
    if result.leaderboard is not None:
        print(result.leaderboard.quba.to_string(float_format=lambda v: f"{v:.4g}", na_rep="—"))
        print(result.written[-1])
    else:
        print(args.out / SWEEP_JSON)
    return 1 if result.errors else 0


def suite_options(args):
    """The :class:`~imagenet_suite.inference.suite_options.SuiteOptions` of the parsed arguments (checked when made)."""
    from imagenet_suite.inference.predict import PredictOptions
    from imagenet_suite.inference.suite_options import SuiteOptions

    predict = PredictOptions(
        device=resolve_device(args.device),
        batch_size=args.batch_size,
        workers=args.workers,
        features=args.features,
        amp=args.amp,
        progress=not args.no_progress,
    )
    return SuiteOptions(
        predict=predict,
        detector_stats=args.detector_stats,
        adversarial=args.adversarial,
        adversarial_seed=args.adversarial_seed,
        attacks=args.attacks,
        attack_convention=args.attack_convention,
        allow_partial=args.allow_partial,
        executor=args.executor,
        ray_address=args.ray_address,
        num_proc=args.num_proc,
        gpus_per_task=args.gpus_per_task,
        protocols=tuple(args.protocols),
        hierarchy=args.hierarchy,
        bootstrap=args.bootstrap,
        bootstrap_seed=args.bootstrap_seed,
        dedup=args.dedup,
        prediction_store=args.prediction_store,
        benchmark=args.benchmark,
    )
