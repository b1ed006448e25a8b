"""``imagenet-suite info NAME``: sources (with the exact manual files), configs, features, card."""

from __future__ import annotations

import json


def register(subparsers) -> None:
    parser = subparsers.add_parser("info", help="show a builder's sources, configs, features and card")
    parser.add_argument("name", help="builder name (see `imagenet-suite list`)")
    parser.set_defaults(func=run)


def run(args) -> int:
    from imagenet_suite.core import card, registry

    cls = registry.get(args.name)
    print(f"{cls.NAME} {cls.VERSION}  {cls.HOMEPAGE}")
    print("\nSources:")
    for source in cls.SOURCES:
        print(f"  {source.name}: {source.describe()}")
        if source.instructions:
            print(f"      {source.instructions}")
    if cls.MANUAL_DOWNLOAD_INSTRUCTIONS:
        print(f"\nManual files:\n{cls.MANUAL_DOWNLOAD_INSTRUCTIONS}")
    if cls.OPTIONS:
        print("\nOptions:")
        for name, option in cls.OPTIONS.items():
            choices = f" choices {list(option.choices)}" if option.choices else ""
            print(f"  {name} (default {option.default!r}{choices}): {option.help}")
    print("\nConfigs:")
    for config in cls.CONFIGS:
        print(f"  {config.name}: {config.description}")
        features = cls(config.name).features()
        print("    features: " + json.dumps({k: _short(v) for k, v in features.items()}))
    print("\nRelease notes:")
    for version, note in cls.RELEASE_NOTES.items():
        print(f"  {version}: {note}")
    template = cls.CARD_TEMPLATE or cls.NAME
    print(f"\nCard template (cards/{template}.md):\n")
    print(card.load_template(template))
    return 0


def _short(feature) -> str:
    text = repr(feature)
    return text if len(text) < 80 else text[:77] + "..."
