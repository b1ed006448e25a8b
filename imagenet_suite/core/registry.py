"""Registry of dataset builders: every ``Builder`` subclass in the :data:`BUILDERS_PACKAGE`.

The builders sit above this framework (they import it), so the registry finds them as plugins, by
package name at run time (like entry points), never by a static import.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Sequence
from typing import Any

from ..errors import ConfigError, unknown_choice
from .builder import Builder

BUILDERS_PACKAGE = "imagenet_suite.builders"
_EXTRA: dict[str, type[Builder]] = {}


def register(cls: type[Builder]) -> type[Builder]:
    """Register a builder defined outside ``imagenet_suite.builders`` (plugins, tests)."""
    cls.check_declaration()
    _EXTRA[cls.NAME] = cls
    return cls


def _discover() -> dict[str, type[Builder]]:
    builders = importlib.import_module(BUILDERS_PACKAGE)
    found: dict[str, type[Builder]] = {}
    for module_info in pkgutil.iter_modules(builders.__path__):
        if module_info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{builders.__name__}.{module_info.name}")
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, Builder)
                and "NAME" in vars(value)
                and value.__module__ == module.__name__
            ):
                value.check_declaration()
                if value.NAME in found:
                    raise TypeError(f"two builders named {value.NAME!r}")
                found[value.NAME] = value
    return found


def all_builders() -> dict[str, type[Builder]]:
    """Builders by name, sorted."""
    found = {**_discover(), **_EXTRA}
    return dict(sorted(found.items()))


def get(name: str) -> type[Builder]:
    builders = all_builders()
    if name not in builders:
        raise ConfigError(f"unknown builder {name!r}; {unknown_choice(name, builders, 'builders')}")
    return builders[name]


def builders(
    name: str,
    configs: Sequence[str] | None = None,
    *,
    seed: int = 0,
    options: dict[str, Any] | None = None,
    shard_size: int | None = None,
) -> list[Builder]:
    """One builder ``name`` per config of ``configs`` (default: its first config; repeats dropped), made with
    ``seed``, builder ``options`` and ``shard_size``: the request a build runs, checked (ConfigError naming an
    unknown builder, config or option, or a bad option value) without importing anything the build needs."""
    cls = get(name)
    names = list(dict.fromkeys(configs or [cls.CONFIGS[0].name]))
    return [cls(config, seed=seed, options=options, shard_size=shard_size) for config in names]
