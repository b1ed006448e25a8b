"""User models — ``path/to/file.py:callable`` and ``module:callable`` — and the identity of their code.

A library model (timm, torchvision, open_clip) is identified by its spec, weights tag and weights; a user
model's architecture is whatever its code builds, so its code is part of its identity too: the sha256 of
its *source file* (:func:`model_code_sha256`, :func:`load_user_model`), recorded as ``code_sha256`` in
run.json, in predict's resume manifest and the prediction store's identity, in a sweep's fingerprint and
run folder name, and in the provenance of ``ood fit-stats``. An edited model is therefore never taken for
the one whose outputs, statistics or results are on disk.

What is hashed is one file: the ``.py`` named (exactly the bytes that are executed: they are read once,
hashed, then compiled), or for ``module:callable`` the module's file as Python's import finds it (the
package's ``__init__.py`` for a package; a module without a file, built-in or a namespace package, has no
code hash). Imports are *not* followed: the modules a model file imports (its own helpers, a library) are
not part of the hash — following them is unbounded (every installed package) and still misses data files
and environment variables. Keep a model in one file, or give a changed helper a new model file name, when
the helper's changes should count; the library versions that matter (torch, timm) are recorded separately.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ..errors import ConfigError
from ..files import sha256_file

MODEL_FORMS = "timm:<name>, torchvision:<name>, open_clip:<arch>, <module>:<callable> or <path/to/file.py>:<callable>"
LIBRARIES = ("timm", "torchvision", "open_clip")


def model_code_sha256(spec: str) -> str | None:
    """The sha256 of the source file of a user model spec, read without running it (None for a library
    model, a module without a file, or a module Python cannot find; a ``.py`` that does not exist is left
    to the caller to refuse). For a dotted module, finding it imports its parent packages, as import does.

    Example:
        >>> import pathlib, tempfile, hashlib
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "net.py"
        >>> _ = path.write_text("def make(): ...\\n")
        >>> model_code_sha256(f"{path}:make") == hashlib.sha256(b"def make(): ...\\n").hexdigest()
        True
        >>> model_code_sha256("timm:resnet50") is None
        True
    """
    source, sep, _ = spec.rpartition(":")
    if not sep or not source or source in LIBRARIES:
        return None
    if source.endswith(".py"):
        return sha256_file(source) if Path(source).is_file() else None
    try:
        found = importlib.util.find_spec(source)
    except Exception:  # a parent package that fails to import: loading the model fails later, naming it
        return None
    origin = getattr(found, "origin", None) if found is not None else None
    return sha256_file(origin) if origin and Path(origin).is_file() else None


def load_callable(spec: str, source: str, name: str) -> Callable[..., Any]:
    """The callable ``name`` of a module path or a ``.py`` file (ConfigError naming what is missing)."""
    return _load_callable(spec, source, name)[0]


def _load_callable(spec: str, source: str, name: str) -> tuple[Callable[..., Any], str | None]:
    """The callable and the sha256 of the file whose code defined it (the bytes executed, for a ``.py``)."""
    if source.endswith(".py"):
        path = Path(source)
        if not path.is_file():
            raise ConfigError(f"{spec!r}: file {path} does not exist")
        data = path.read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        module_spec = importlib.util.spec_from_file_location(f"imagenet_suite_user_{path.stem}", path)
        module = importlib.util.module_from_spec(module_spec)
        try:
            exec(compile(data, str(path), "exec"), module.__dict__)  # the bytes hashed above, as import would run them
        except Exception as err:
            raise ConfigError(f"{spec!r}: importing {path} failed ({type(err).__name__}: {err})") from err
    else:
        try:
            module = importlib.import_module(source)
        except ImportError as err:
            raise ConfigError(f"{spec!r}: cannot import module {source!r} ({err}); expected {MODEL_FORMS}") from err
        origin = getattr(module, "__file__", None)
        digest = sha256_file(origin) if origin and Path(origin).is_file() else None
    factory = getattr(module, name, None)
    if not callable(factory):
        raise ConfigError(f"{spec!r}: {source} has no callable {name!r}")
    return factory, digest


def load_user_model(spec: str, source: str, name: str, seed: int) -> tuple[nn.Module, str | None]:
    """The ``nn.Module`` that ``name()`` of ``source`` returns, built under ``torch.manual_seed(seed)`` (the
    caller's RNG state kept), and the sha256 of its code (:func:`model_code_sha256`'s file, as executed)."""
    factory, digest = _load_callable(spec, source, name)
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model = factory()
    except Exception as err:
        raise ConfigError(f"model {spec!r}: {name}() failed ({type(err).__name__}: {err})") from err
    if not isinstance(model, nn.Module):
        raise ConfigError(f"model {spec!r}: {name}() returned {type(model).__name__!r}, not a torch nn.Module")
    return model, digest


__all__ = ["load_callable", "load_user_model", "model_code_sha256"]
