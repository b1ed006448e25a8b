"""``imagenet-suite review open|export|import|status|precheck``: contamination review in the FiftyOne App.

* ``review open DATASET_DIR [--config C] [--split S] [--outputs FILE] [--port P]`` loads the dataset
  (and model outputs) into FiftyOne, saves the review views, serves the App on 127.0.0.1, prints the
  dataset name and the App URL with its session token (last stdout line), and records decisions
  until interrupted;
* ``review load DATASET_DIR ...`` takes the same inputs as ``open`` and loads without serving the App;
  both take the review signals: ``--id-outputs FILE --features FILE --id-features FILE --detector-stats
  FILE [--fail-threshold FPR]`` (every OOD detector's score and the unit-test verdicts, as ``score``
  computes them), ``--reference DIR`` (a built ``imagenet_val``: look-alikes from a similarity index over
  the features; ``--embeddings-plot PNG``), ``--other-review TABLE`` (another reviewer's decisions,
  for the ``reviewer_disagreements`` view), ``--no-precheck``;
* ``review export NAME --out FILE`` writes the decision table and ``FILE.sha256``; prints the sha256;
* ``review import NAME FILE`` loads a decision table, or the NINCO authors' logs (a
  ``cleaning_annotations`` folder or one of its CSVs);
* ``review status NAME [--compare TABLE [TABLE]] [--json]`` prints decisions per value and per class;
  with ``--compare``, per-class agreement and Cohen's kappa between this dataset's decisions and
  another reviewer's table (or between two tables);
* ``review precheck CLASS... [--max-steps N] [--json]`` prints the WordNet pre-check of candidate
  OOD classes (names, synset names or wnids): a verdict and the ImageNet-1k classes matched.

Every subcommand but ``precheck`` takes ``--database-uri`` (``mongodb://127.0.0.1:PORT``, or a unix socket's path or
``mongodb://%2F…%2FNAME.sock`` URI; default: the embedded mongod on a private unix socket).
"""

from __future__ import annotations

import json
import signal
import sys
import time
from pathlib import Path

from ._flags import rename


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "review", help="contamination review in the FiftyOne App (open, export, import, status, precheck)"
    )
    commands = parser.add_subparsers(dest="review_command", required=True, metavar="SUBCOMMAND")

    opened = commands.add_parser("open", help="load a dataset folder into FiftyOne and serve the App on loopback")
    opened.add_argument("folder", type=Path, metavar="DATASET_DIR", help="a folder written by `imagenet-suite build`")
    opened.add_argument("--config", help="config to review (default: the only one)")
    opened.add_argument("--split", help="split to review (default: the only one)")
    opened.add_argument("--outputs", type=Path, metavar="FILE", help="model outputs (.pt/.npz: ids + [N, 1000] scores)")
    opened.add_argument("--port", type=int, help="App port on 127.0.0.1 (default: a free one)")
    opened.add_argument("--name", help="FiftyOne dataset name (default: <folder>-<config>-<split>)")
    opened.add_argument(
        "--threshold",
        type=float,
        default=0.5,
        help="MSP from which an OOD sample is a contamination candidate (default 0.5)",
    )
    opened.add_argument("--reviewer", help="name recorded with your decisions (default: login name)")
    opened.add_argument("--cache-dir", type=Path, help="where images are materialised (default: user cache)")
    opened.set_defaults(func=run_open)
    loaded = commands.add_parser("load", help="load a dataset folder (+ outputs and signals) into FiftyOne, no App")
    for action in opened._actions:
        if action.dest not in ("help", "port", "func"):
            loaded._add_action(action)
    loaded.set_defaults(func=run_load)
    for sub in (opened, loaded):
        _add_signal_arguments(sub)

    exported = commands.add_parser("export", help="write the decision table (id, decision, reviewer, timestamp, note)")
    exported.add_argument("name", help="FiftyOne dataset name (printed by `review open`)")
    exported.add_argument("--out", type=Path, required=True, metavar="FILE", help="CSV to write (+ FILE.sha256)")
    exported.set_defaults(func=run_export)

    imported = commands.add_parser("import", help="load a decision table or the NINCO authors' review logs")
    imported.add_argument("name", help="FiftyOne dataset name")
    imported.add_argument("file", type=Path, help="decision table, or NINCO cleaning_annotations folder / log CSV")
    imported.set_defaults(func=run_import)

    status = commands.add_parser(
        "status", help="decisions per value and per class; --compare: agreement with another reviewer"
    )
    status.add_argument("name", help="FiftyOne dataset name")
    status.add_argument(
        "--compare",
        nargs="+",
        type=Path,
        metavar="TABLE",
        help="another reviewer's decision table: per-class agreement and Cohen's kappa with this dataset's "
        "decisions (two tables: with each other)",
    )
    status.add_argument("--json", action="store_true", help="machine-readable output")
    status.set_defaults(func=run_status)
    rename(status, tables="--compare")  # review.status.compare_reviews(..., tables)

    prechecked = commands.add_parser(
        "precheck", help="WordNet pre-check of candidate OOD classes against ImageNet-1k (no database)"
    )
    prechecked.add_argument(
        "candidates", nargs="+", metavar="CLASS", help="class name (hayfield), synset name (police_dog.n.01) or wnid"
    )
    prechecked.add_argument(
        "--max-steps",
        type=int,
        default=1,
        help="close_ancestor: shared ancestor at most this many is-a edges above the candidate (default 1)",
    )
    prechecked.add_argument("--json", action="store_true", help="machine-readable output")
    prechecked.set_defaults(func=run_precheck)

    for sub in (opened, loaded, exported, imported, status):
        sub.add_argument(
            "--database-uri",
            metavar="URI",
            help="external MongoDB on loopback (mongodb://127.0.0.1:PORT) or a unix socket "
            "(/path/to/mongodb.sock) (default: the embedded one, on a private unix socket)",
        )


def _add_signal_arguments(parser) -> None:
    """The review signals (names as in ``imagenet-suite score``'s OOD flags where they mean the same)."""
    group = parser.add_argument_group("review signals (OOD detectors, unit tests, look-alikes, another reviewer)")
    group.add_argument(
        "--id-outputs", type=Path, metavar="FILE", help="the same model's outputs on the ID set (ImageNet val)"
    )
    group.add_argument(
        "--features",
        "--ood-features",
        dest="features",
        type=Path,
        metavar="FILE",
        help="penultimate features of this dataset's rows (.pt/.npz: ids + features)",
    )
    group.add_argument(
        "--id-features", type=Path, metavar="FILE", help="penultimate features of the ID (and --reference) images"
    )
    group.add_argument(
        "--detector-stats", type=Path, metavar="FILE", help="fitted train statistics (DetectorStats.save)"
    )
    group.add_argument(
        "--fail-threshold", type=float, metavar="FPR", help="unit-test failure threshold on FPR@95 (default 0.10)"
    )
    group.add_argument(
        "--reference", type=Path, metavar="DIR", help="built imagenet_val folder: the look-alike reference images"
    )
    group.add_argument("--reference-config", help="config of --reference (default: the only one)")
    group.add_argument(
        "--embeddings-plot", type=Path, metavar="PNG", help="write the OOD-vs-ID embeddings plot (needs --reference)"
    )
    group.add_argument(
        "--other-review", type=Path, metavar="TABLE", help="another reviewer's decision table (reviewer_disagreements)"
    )
    group.add_argument("--no-precheck", action="store_true", help="skip the WordNet pre-check of the OOD classes")


def _prepare(args):
    from imagenet_suite.errors import ConfigError
    from imagenet_suite.review.load import LoadOptions, prepare_load

    if args.embeddings_plot is not None and args.reference is None:
        raise ConfigError("--embeddings-plot needs --reference DIR (and --features, --id-features)")
    options = LoadOptions(
        outputs=args.outputs,
        name=args.name,
        cache_dir=args.cache_dir,
        threshold=args.threshold,
        reviewer=args.reviewer,
        id_outputs=args.id_outputs,
        features=args.features,
        id_features=args.id_features,
        detector_stats=args.detector_stats,
        fail_threshold=args.fail_threshold,
        precheck=not args.no_precheck,
        reference=args.reference,
        reference_config=args.reference_config,
        other_review=args.other_review,
    )
    return prepare_load(args.folder, args.config, args.split, options)


def _after_load(args, dataset) -> None:
    if args.embeddings_plot is not None:
        from imagenet_suite.review.lookalikes import write_embeddings_plot

        print(f"wrote {write_embeddings_plot(dataset, args.embeddings_plot)}", file=sys.stderr)


def run_load(args) -> int:
    from imagenet_suite.review.load import apply_load

    load = _prepare(args)
    dataset = apply_load(_connect(args), load)
    _after_load(args, dataset)
    print(f"dataset: {dataset.name}")
    return 0


def run_open(args) -> int:
    from imagenet_suite.review import app
    from imagenet_suite.review.load import apply_load
    from imagenet_suite.review.media_paths import review_media_roots
    from imagenet_suite.review.views import opening_view

    if args.port is not None:
        app.check_port(args.port)  # fail before anything is loaded
    load = _prepare(args)
    fo = _connect(args)
    server = app.launch_app(args.port, review_media_roots(fo, load))  # starts while the dataset loads
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        dataset = apply_load(fo, load)
        _after_load(args, dataset)
        opening = opening_view(dataset)
        server.wait_until_up()
        print(HOW_TO_DECIDE, file=sys.stderr, flush=True)
        print(f"dataset: {dataset.name}", flush=True)
        print(server.url(dataset.name, opening and opening[1]), flush=True)
        _record_decisions(dataset, server)
        return 1
    finally:
        server.stop()


HOW_TO_DECIDE = (
    "In the App (it opens on the saved view contamination_candidates, most confident first; the others "
    "are in the menu at the top left): "
    "select samples (the checkbox at a tile's top left), click the tag icon above the grid, type "
    "id / ood / unsure (or tick it once it exists) and press Apply. Each decision is stored when you "
    "press Apply. Tag the contamination type the same way: contamination:categorical / "
    "contamination:incidental / contamination:none, incidental:background / incidental:prominent_part / "
    "incidental:both_classes, and in1k:<wnid> for each ImageNet-1k class seen. With --reference, the views "
    "`lookalikes: <row id>` show an OOD sample and its nearest ImageNet images (or tick a sample and use "
    "'sort by similarity', brain key lookalikes). Open the App at the URL "
    "printed last (its token lets only you in). Ctrl-C stops the App."
)


def _record_decisions(dataset, server) -> None:
    """Record reviewer and time of new decisions every few seconds while the App runs."""
    from pymongo.errors import PyMongoError

    from imagenet_suite.review import decisions
    from imagenet_suite.review.errors import ReviewError

    while server.running():
        time.sleep(decisions.SYNC_SECONDS)
        try:
            decisions.sync(dataset)
        except PyMongoError as err:
            raise ReviewError(
                f"lost the database while the App was open ({type(err).__name__}: {err}); decisions "
                "made so far are stored; run `imagenet-suite review open` again"
            ) from err
    print("the App server stopped", file=sys.stderr)


def _connect(args):
    """FiftyOne on the chosen database, its log messages on stderr (stdout is for results)."""
    import logging

    from imagenet_suite.review import database

    fo = database.connect(args.database_uri)
    from fiftyone.core.logging import _get_loggers

    for logger in _get_loggers():
        for handler in logger.handlers:
            if isinstance(handler, logging.StreamHandler) and handler.stream in (sys.stdout, sys.__stdout__):
                handler.setStream(sys.stderr)
    return fo


def _dataset(args):
    from imagenet_suite.review.errors import ReviewError

    fo = _connect(args)
    if args.name not in fo.list_datasets():
        raise ReviewError(
            f"no FiftyOne dataset named {args.name!r}; datasets: {fo.list_datasets() or 'none'} "
            "(`imagenet-suite review open DATASET_DIR` creates one)"
        )
    return fo.load_dataset(args.name)


def run_export(args) -> int:
    from imagenet_suite.review.decisions import export_decisions

    table, sha256 = export_decisions(_dataset(args), args.out)
    print(
        f"{len(table.decisions)} decisions, table version {table.version}: "
        + ", ".join(f"{k} {v}" for k, v in table.counts().items()),
        file=sys.stderr,
    )
    print(sha256)
    return 0


def run_import(args) -> int:
    from imagenet_suite.review.decision_table import read_decision_table
    from imagenet_suite.review.decisions import import_decisions
    from imagenet_suite.review.errors import DecisionTableError
    from imagenet_suite.review.ninco_logs import import_authors_logs, is_authors_log

    if not args.file.exists():
        raise DecisionTableError(f"{args.file} does not exist")
    if is_authors_log(args.file):
        summary = import_authors_logs(_dataset(args), args.file)
        matched = sum(s["matched"] for s in summary.values())
        print(
            f"imported the NINCO authors' logs of {len(summary)} datasets/classes: "
            f"{sum(s['images'] for s in summary.values())} images, {matched} of them samples here"
        )
        return 0
    table = read_decision_table(args.file)  # validated before the database is touched
    count = import_decisions(_dataset(args), table, source=str(args.file))
    print(f"imported {count} decisions (table version {table.version})")
    return 0


def run_status(args) -> int:
    from imagenet_suite.review.errors import DecisionTableError
    from imagenet_suite.review.status import format_status, review_status

    for path in args.compare or ():
        if not path.is_file():  # before the database is started
            raise DecisionTableError(f"--compare: decision table {path} does not exist")
    if args.compare and len(args.compare) > 2:
        raise DecisionTableError(f"--compare takes one or two decision tables, got {len(args.compare)}")
    status = review_status(_dataset(args), compare=args.compare or ())
    print(json.dumps(status, indent=1) if args.json else format_status(status), end="\n" if args.json else "")
    return 0


def run_precheck(args) -> int:
    from imagenet_suite.errors import HierarchyError
    from imagenet_suite.hierarchies.ood_precheck import format_precheck, precheck_summary

    if args.max_steps < 0:
        raise HierarchyError(f"--max-steps must be >= 0, got {args.max_steps}")
    summary = precheck_summary(args.candidates, max_steps=args.max_steps)
    print(json.dumps(summary, indent=1) if args.json else format_precheck(summary), end="\n" if args.json else "")
    return 0
