"""Dataset card: ``README.md`` = YAML front matter (configs, dataset_info) + the prose template.

The YAML is produced by the same ``datasets`` / ``huggingface_hub`` machinery ``push_to_hub``
uses, and declares every config (with ``version``) and every split (``num_examples``,
``num_bytes``) with full ``features``, so ``load_dataset(folder, config)`` needs no code of ours
and verifies split sizes. Each config entry also carries a ``description`` holding the config's
content hash: ``datasets`` hashes config parameters into its cache key, so a rebuilt or
different dataset in a same-named folder can never be served from a stale cache.

The prose comes from ``cards/<builder>.md`` (``{{placeholders}}`` filled from build facts),
followed by generated sections: how to load, configs and splits, protocol, sources, release notes.
"""

from __future__ import annotations

import hashlib
import json
import re
from importlib import resources
from typing import Any

from ..errors import ConfigError

PLACEHOLDER = re.compile(r"\{\{\s*(\w+)\s*\}\}")


def load_template(name: str) -> str:
    """The card template ``cards/<name>.md`` shipped in the package."""
    path = resources.files("imagenet_suite.cards") / f"{name}.md"
    if not path.is_file():
        raise ConfigError(f"no card template cards/{name}.md for builder {name!r}")
    return path.read_text(encoding="utf-8")


def content_hash(config_info: dict) -> str:
    """sha256 over a config's file hashes and row counts: changes whenever its data changes."""
    payload = json.dumps({"files": config_info["files"], "splits": config_info["splits"]}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()


def card_yaml(build_info: dict, default_config: str) -> str:
    """YAML front matter (without ``---``) for every config in ``build_info``."""
    from datasets import DatasetInfo, Features, SplitDict, SplitInfo
    from datasets.info import DatasetInfosDict
    from huggingface_hub import DatasetCardData

    infos = {}
    configs = []
    for name, cfg in build_info["configs"].items():
        splits = SplitDict()
        for split, meta in cfg["splits"].items():
            splits.add(SplitInfo(name=split, num_bytes=meta["num_bytes"], num_examples=meta["num_examples"]))
        infos[name] = DatasetInfo(
            features=Features.from_dict(cfg["features"]),
            splits=splits,
            config_name=name,
            dataset_size=sum(m["num_bytes"] for m in cfg["splits"].values()),
        )
        entry: dict[str, Any] = {"config_name": name}
        if name == default_config:
            entry["default"] = True
        entry["version"] = build_info["version"]
        entry["description"] = (
            f"{build_info['builder']} {build_info['version']} {name}; content sha256 {content_hash(cfg)}"
        )
        entry["data_files"] = [{"split": s, "path": f"{name}/{s}-*.parquet"} for s in cfg["splits"]]
        configs.append(entry)
    card_data = DatasetCardData(license=build_info.get("license"), pretty_name=build_info.get("pretty_name"))
    DatasetInfosDict(infos).to_dataset_card_data(card_data)
    card_data.configs = configs
    return card_data.to_yaml()


def render_card(
    build_info: dict, default_config: str, template: str, context: dict[str, Any], generated_sections: str
) -> str:
    """Full README.md text."""
    body = PLACEHOLDER.sub(lambda m: str(context.get(m.group(1), m.group(0))), template)
    return f"---\n{card_yaml(build_info, default_config)}\n---\n\n{body.rstrip()}\n\n{generated_sections.rstrip()}\n"


def generated_sections(builder_cls, build_info: dict, default_config: str) -> str:
    """Markdown sections generated from the build: load snippet, configs, protocol, sources, notes."""
    name, version = build_info["builder"], build_info["version"]
    lines = ["## How to load", "", "```python", "from datasets import load_dataset", ""]
    for config, cfg in build_info["configs"].items():
        split = next(iter(cfg["splits"]))
        lines.append(f'ds = load_dataset("path/to/{build_info["folder"]}", "{config}", split="{split}")')
    lines += [
        "```",
        "",
        "No code of imagenet-suite is needed to read the data; `imagenet-suite verify FOLDER`",
        "re-checks every file against `build_info.json`.",
        "",
        "## Configs and splits",
        "",
        "| config | description | split | examples | files |",
        "|---|---|---|---|---|",
    ]
    for config, cfg in build_info["configs"].items():
        description = builder_cls.config_named(config).description
        for split, meta in cfg["splits"].items():
            files = sum(1 for f in cfg["files"].values() if f.get("split") == split)
            lines.append(
                f"| `{config}`{' (default)' if config == default_config else ''} | {description} | "
                f"{split} | {meta['num_examples']:,} | {files} |"
            )
    lines += [
        "",
        f"Builder `{name}` version **{version}**, imagenet-suite {build_info['package_version']}"
        + (f", seed {build_info['seed']}" if build_info.get("seed") is not None else "")
        + ".",
    ]
    for config, cfg in build_info["configs"].items():
        if cfg.get("options"):
            lines.append(f"Options of `{config}`: `{json.dumps(cfg['options'], sort_keys=True)}`.")
        if cfg.get("protocol"):
            lines += [
                "",
                f"### Evaluation protocol of `{config}`",
                "",
                "```json",
                json.dumps(cfg["protocol"], indent=1, sort_keys=True)[:4000],
                "```",
            ]
    lines += ["", "## Sources", "", "| config | source | file | size (bytes) | sha256 |", "|---|---|---|---|---|"]
    for config, cfg in build_info["configs"].items():
        for source, meta in cfg["sources"].items():
            lines.append(f"| `{config}` | {source} | `{meta['file']}` | {meta['size']:,} | `{meta['sha256']}` |")
    lines += ["", "## Release notes", ""]
    lines += [
        f"- **{v}**: {note}" for v, note in sorted(builder_cls.RELEASE_NOTES.items(), key=_semver_key, reverse=True)
    ]
    if builder_cls.CITATION:
        lines += ["", "## Citation", "", "```bibtex", builder_cls.CITATION.strip(), "```"]
    return "\n".join(lines) + "\n"


def _semver_key(item: tuple[str, str]) -> tuple[int, ...]:
    return tuple(int(x) for x in item[0].split("."))
