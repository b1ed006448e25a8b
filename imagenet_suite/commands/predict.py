"""``imagenet-suite predict DATASET_DIR --model MODEL --out FILE``: a model's outputs on a built split.

Writes ``ids`` + ``logits`` (+ ``features`` with ``--features``) to a ``.pt`` file that ``score``
reads unchanged; prints the file. Before loading a library's pretrained weights it says on stderr
which (the tag the model spec resolves to, and the tag the papers used where it differs). Logic:
:mod:`imagenet_suite.inference`.
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
        "resnet50.DEFAULT), <module>:<callable> or <path/to/file.py>:<callable> (an nn.Module); without a tag, "
        "the library's default tag (stated before loading, recorded)",
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
    parser.set_defaults(func=run)


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
    check_outputs_file(args.out)
    check_store_folder(args.prediction_store)
    folder = DatasetFolder(args.folder)
    state_weights(args.model, args.weights, args.seed)
    loaded = load_model(args.model, args.weights, seed=args.seed)
    predictor = PredictionStore(args.prediction_store).predict if args.prediction_store else predict
    out = predictor(folder, loaded, args.out, config=args.config, split=args.split, options=options)
    print(out)
    return 0


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
