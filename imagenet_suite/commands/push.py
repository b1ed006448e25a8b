"""``imagenet-suite push DIR --repo-id ID``: verify, upload to the HF Hub, tag ``v<version>``."""

from __future__ import annotations

from pathlib import Path


def register(subparsers) -> None:
    parser = subparsers.add_parser("push", help="upload a verified dataset folder to the HF Hub and tag its version")
    parser.add_argument("folder", type=Path)
    parser.add_argument("--repo-id", required=True, help="dataset repository, e.g. my-org/imagenet-val")
    parser.add_argument(
        "--public", action="store_true", help="create the repo public (default private: ImageNet terms)"
    )
    parser.set_defaults(func=run)


def run(args) -> int:
    from imagenet_suite.dataset.hub import push_folder

    print(push_folder(args.folder, args.repo_id, private=not args.public))
    return 0
