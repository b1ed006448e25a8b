"""``imagenet-suite list``: builders, versions and configs."""

from __future__ import annotations


def register(subparsers) -> None:
    parser = subparsers.add_parser("list", help="list builders, their versions and configs")
    parser.set_defaults(func=run)


def run(args) -> int:
    from imagenet_suite.core import registry

    for name, cls in registry.all_builders().items():
        print(f"{name}\t{cls.VERSION}\t{','.join(c.name for c in cls.CONFIGS)}")
    return 0
