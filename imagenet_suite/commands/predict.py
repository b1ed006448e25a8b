"""``imagenet-suite predict DATASET_DIR --model MODEL --out FILE``: a model's outputs on a built split.

Writes ``ids`` + ``logits`` (+ ``features`` with ``--features``) to a ``.pt`` file that ``score``
reads unchanged; prints the file. Before loading a library's pretrained weights it says on stderr
which (the tag the model spec resolves to, and the tag the papers used where it differs). An
``open_clip:`` model is a zero-shot classifier whose head ``--prompts``, ``--class-names``,
``--logit-scale`` and ``--probabilities`` choose (:mod:`imagenet_suite.inference.zero_shot`);
``--zero-shot-stats FILE`` writes its text embeddings as detector statistics (NINCO's cosine and MCM).
Logic: :mod:`imagenet_suite.inference`.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers) -> None:
    parser = subparsers.add_parser("predict", help="run a model over a built dataset split; write its outputs file")
    parser.add_argument("folder", type=Path, metavar="DATASET_DIR")
    parser.add_argument(
        "--model",
        required=True,
        help="timm:<name>[.<tag>] (resnet50.a1_in1k), torchvision:<name>[.<WEIGHTS>] (resnet50.IMAGENET1K_V1, "
        "resnet50.DEFAULT), open_clip:<arch>[.<tag>] (ViT-B-16.openai: zero-shot), <module>:<callable> or "
        "<path/to/file.py>:<callable> (an nn.Module); without a tag, the library's default tag (stated before "
        "loading, recorded)",
    )
    parser.add_argument("--out", type=Path, required=True, metavar="FILE", help="outputs file to write (.pt)")
    parser.add_argument(
        "--weights",
        metavar="FILE|none",
        help="state dict (.safetensors, .pt, .pth); 'none': seeded random init; default: the pretrained weights "
        "of the model's tag",
    )
    parser.add_argument("--config", help="dataset config (default: the only one built)")
    parser.add_argument("--split", help="split (default: the only one)")
    parser.add_argument("--device", default=None, help="cpu, cuda, cuda:1, ... (default: cuda when available)")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--workers", type=int, default=None, help="DataLoader workers (default: min(4, CPUs))")
    parser.add_argument("--features", action="store_true", help="also store the penultimate features (OOD detectors)")
    parser.add_argument("--amp", action="store_true", help="autocast (float16 on CUDA, bfloat16 on CPU)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random init with --weights none")
    parser.add_argument(
        "--transform",
        metavar="MODULE:CALLABLE",
        help="replace the model's preprocessing: a callable returning a transform (PIL image -> tensor)",
    )
    parser.add_argument(
        "--gpu-decode",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="decode baseline/progressive YCbCr JPEGs with nvJPEG and preprocess them on the device "
        "(default: on with a CUDA device; CMYK, grayscale and PNG images keep the CPU path)",
    )
    parser.add_argument(
        "--prediction-store",
        type=Path,
        metavar="DIR",
        help="keep the predictions by image sha256 in DIR and predict only the images it lacks (shared with "
        "other predict and evaluate runs of the same model and preprocessing)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    zero_shot = add_zero_shot_arguments(parser)
    zero_shot.add_argument(
        "--zero-shot-stats",
        type=Path,
        metavar="FILE",
        help="also write the head's text embeddings as detector statistics (score --detector-stats: NINCO's "
        "cosine and MCM = rcos)",
    )
    parser.set_defaults(func=run)


ZERO_SHOT_FLAGS = {
    "prompts": "--prompts",
    "class_names": "--class-names",
    "logit_scale": "--logit-scale",
    "probabilities": "--probabilities",
    "zero_shot_stats": "--zero-shot-stats",
}


def add_zero_shot_arguments(parser):
    """The flags of an ``open_clip:`` model's zero-shot head (predict and evaluate); returns their group."""
    group = parser.add_argument_group("zero-shot head (open_clip: models)")
    group.add_argument(
        "--prompts",
        metavar="openai80|photo|taxonomy[:DEPTH]|FILE",
        help="openai80: CLIP's 80 ImageNet templates (default); photo: 'a photo of a {}' (LCA-on-the-Line, NINCO); "
        "taxonomy[:DEPTH]: 'A, which is a type of B, ...' from WordNet (LCA-on-the-Line App. G.1, default depth 2); "
        "FILE: one template per line with one {}",
    )
    group.add_argument(
        "--class-names", choices=("clip", "wordnet"), help="clip: CLIP's curated names (default); wordnet: lemmas"
    )
    group.add_argument(
        "--logit-scale",
        metavar="S|model",
        help="logits = S·cos (default 100; a model with a logit bias, SigLIP: its own); model: the checkpoint's",
    )
    group.add_argument(
        "--probabilities",
        choices=("softmax", "hesse2025"),
        help="softmax: the outputs are logits, softmaxed once by score (default); hesse2025: Beyond Accuracy's "
        "wrapper outputs softmax(100·cos) (SigLIP: sigmoid), softmaxed again by score as in that paper",
    )
    return group


def zero_shot_options(args, device: str, model: str | None = None):
    """The :class:`~imagenet_suite.inference.zero_shot.ZeroShotOptions` of the parsed arguments, or None for a
    ``model`` (default ``--model``) that is not ``open_clip:`` (ConfigError naming a zero-shot flag given for
    one). A sweep passes ``model=""``: the options apply to each open_clip model of it."""
    from imagenet_suite.errors import ConfigError
    from imagenet_suite.inference.zero_shot import ZeroShotOptions

    model = args.model if model is None else model
    if model and not model.startswith("open_clip:"):
        given = [flag for dest, flag in ZERO_SHOT_FLAGS.items() if getattr(args, dest, None) is not None]
        if given:
            raise ConfigError(f"{given[0]} applies to open_clip: models only, not to {model!r}")
        return None
    scale = args.logit_scale
    if scale is not None and scale != "model":
        try:
            scale = float(scale)
        except ValueError as err:
            raise ConfigError(f"--logit-scale must be a number > 0 or 'model', got {scale!r}") from err
    chosen = {
        "prompts": args.prompts,
        "class_names": args.class_names,
        "logit_scale": scale,
        "probabilities": args.probabilities,
    }
    return ZeroShotOptions(
        **{key: value for key, value in chosen.items() if value is not None},
        device=device,
        progress=not args.no_progress,
    )


def resolve_device(name: str | None) -> str:
    """``--device``, checked (ConfigError naming it), or cuda when available, else cpu."""
    import torch

    from imagenet_suite.errors import ConfigError

    device = name or ("cuda" if torch.cuda.is_available() else "cpu")
    try:
        torch.device(device)
    except RuntimeError as err:
        raise ConfigError(f"--device {device!r} is not a torch device (cpu, cuda, cuda:1, ...)") from err
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError(f"--device {device}: this machine has no CUDA device; use --device cpu")
    return device


def run(args) -> int:
    from imagenet_suite.dataset.folder import DatasetFolder
    from imagenet_suite.inference import load_model, predict
    from imagenet_suite.inference.predict import check_outputs_file
    from imagenet_suite.inference.store import PredictionStore, check_store_folder

    # every argument first: a run that cannot finish is refused before a model is loaded or data read
    options = predict_options(args)
    head = zero_shot_options(args, str(options.device))
    check_outputs_file(args.out)
    check_store_folder(args.prediction_store)
    check_written_file(args.zero_shot_stats, "zero_shot_stats")
    folder = DatasetFolder(args.folder)
    state_weights(args.model, args.weights, args.seed)
    loaded = load_model(args.model, args.weights, seed=args.seed, zero_shot_options=head)
    if args.zero_shot_stats is not None:
        from imagenet_suite.inference.zero_shot import zero_shot_detector_stats

        zero_shot_detector_stats(loaded.model).save(args.zero_shot_stats)
    predictor = PredictionStore(args.prediction_store).predict if args.prediction_store else predict
    out = predictor(folder, loaded, args.out, config=args.config, split=args.split, options=options)
    print(out)
    return 0


def check_written_file(path: Path | None, parameter: str) -> None:
    """ConfigError naming ``parameter`` unless ``path`` is None or a file this command can write (not a folder;
    :func:`~imagenet_suite.files.write_problem`): checked before the model is loaded."""
    from imagenet_suite.errors import ConfigError, param
    from imagenet_suite.files import write_problem

    if path is None:
        return
    if path.is_dir():
        raise ConfigError(f"{param(parameter)} {path}: is a folder; expected the path of a file to write")
    problem = write_problem(path)
    if problem is not None:
        raise ConfigError(f"{param(parameter)} {path}: {problem}")


def state_weights(spec: str, weights: str | None, seed: int) -> None:
    """Before pretrained weights are loaded (perhaps downloaded), say on stderr which: the resolved tag,
    where it comes from, and the tag the papers used where it differs (a bad tag: ConfigError)."""
    import sys

    from imagenet_suite.inference import resolve_weights

    chosen = resolve_weights(spec, weights, seed)
    if chosen.loaded:
        print(chosen.statement(), file=sys.stderr, flush=True)


def predict_options(args):
    """The :class:`~imagenet_suite.inference.predict.PredictOptions` of the parsed arguments (checked when
    made; ``--transform``'s callable is loaded)."""
    from imagenet_suite.inference.predict import PredictOptions

    return PredictOptions(
        device=resolve_device(args.device),
        batch_size=args.batch_size,
        workers=args.workers,
        features=args.features,
        amp=args.amp,
        gpu_decode=args.gpu_decode,
        transform=load_transform(args.transform) if args.transform else None,
        transform_name=args.transform,
        progress=not args.no_progress,
    )


def load_transform(spec: str):
    """``--transform MODULE:CALLABLE``: the transform the callable returns."""
    from imagenet_suite.errors import ConfigError
    from imagenet_suite.inference.models import load_callable

    source, _, name = spec.rpartition(":")
    if not source or not name:
        raise ConfigError(f"--transform {spec!r} must be <module>:<callable> or <file.py>:<callable>")
    return load_callable(spec, source, name)()
