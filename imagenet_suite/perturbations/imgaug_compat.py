"""imgaug augmenters as seeded perturbations, on NumPy 2.

imgaug 0.4.0 (the last release, 2020) does not import on NumPy ≥ 2: it reads ``np.sctypes`` at
import time and uses ``np.complex`` in two parameters. :func:`import_imgaug` restores those
names on the ``numpy`` module (only where they are missing, so NumPy 1 is untouched) before the
first import, and fixes ``pillike.Autocontrast``, which hands Pillow ≥ 10 a 1-element array as
its cutoff. Nothing else is changed; imgaug's own code, including its OpenCV calls, runs as
released (checked on OpenCV 4.14 and 5.0).

:class:`ImgaugPerturbation` wraps an augmenter (or a pipeline such as ``iaa.Sequential``) with the
seeding contract of :mod:`imagenet_suite.perturbations.corruptions`: ``perturb(image, rng)`` re-seeds a private
copy of the augmenter from ``rng`` before every image, so the output depends only on (augmenter,
image, rng) — for builders ``rng = example_rng(seed, name, image_id)`` — and not on the order or
process in which images are augmented. :func:`parse_augmenter` builds an augmenter from a string
such as ``"Sequential([GaussianBlur(sigma=1.0), AdditiveGaussianNoise(scale=10)])"`` without
``eval``: only calls of names in ``imgaug.augmenters`` with literal arguments are accepted.
"""

from __future__ import annotations

import ast
import importlib.util
from typing import Any

import numpy as np

from .corruptions import CorruptionError, to_rgb_array

INSTALL_HINT = (
    "imgaug is not installed: install the augment extra (`pip install imagenet-suite[augment]`, or "
    "`uv sync --extra augment`); imagenet-suite makes imgaug 0.4.0 import on NumPy 2. "
    "Or use the built-in corruptions (imagenet_suite.perturbations.corruptions)"
)

_SCTYPES = {
    "int": [np.int8, np.int16, np.int32, np.int64],
    "uint": [np.uint8, np.uint16, np.uint32, np.uint64],
    "float": [np.float16, np.float32, np.float64, np.longdouble],
    "complex": [np.complex64, np.complex128, np.clongdouble],
    "others": [bool, object, bytes, str, np.void],
}
_ALIASES = {"sctypes": _SCTYPES, "bool": np.bool_, "complex": complex}


def imgaug_available() -> bool:
    """Whether the imgaug package is installed (without importing it)."""
    return importlib.util.find_spec("imgaug") is not None


def apply_numpy2_shims() -> list[str]:
    """Put back the NumPy names imgaug 0.4.0 reads (only those missing); returns the names set."""
    restored = []
    for name, value in _ALIASES.items():
        if name not in np.__dict__:
            setattr(np, name, value)
            restored.append(name)
    return restored


def import_imgaug():
    """``imgaug.augmenters``, imported after :func:`apply_numpy2_shims`; ImportError if not installed."""
    if not imgaug_available():
        raise ImportError(INSTALL_HINT)
    apply_numpy2_shims()
    import imgaug.augmenters as iaa
    from imgaug.augmenters import pillike

    if not getattr(pillike._autocontrast_pil, "_imagenet_suite_fixed", False):
        pillike._autocontrast_pil = _scalar_cutoff(pillike._autocontrast_pil)
    return iaa


def _scalar_cutoff(function):
    def autocontrast_pil(image, cutoff, ignore):
        cutoff = np.asarray(cutoff)
        return function(image, float(cutoff.reshape(-1)[0]) if cutoff.size == 1 else tuple(cutoff.tolist()), ignore)

    autocontrast_pil._imagenet_suite_fixed = True
    return autocontrast_pil


class ImgaugPerturbation:
    """An imgaug augmenter (or pipeline) as a seeded perturbation: ``perturb(image, rng) -> uint8 [H', W', 3]``.

    ``image``: as :func:`corruptions.to_rgb_array` accepts (gray/CMYK PIL images become RGB).
    ``rng``: a ``numpy.random.Generator``; one 63-bit integer is drawn from it to seed the augmenter.
    The augmenter may change the image size (crops, resizes).
    """

    def __init__(self, augmenter, name: str | None = None):
        iaa = import_imgaug()
        if not isinstance(augmenter, iaa.meta.Augmenter):
            raise CorruptionError(f"expected an imgaug Augmenter, got {type(augmenter).__name__}")
        self.augmenter = augmenter.deepcopy()
        self.name = name or augmenter.name

    def __call__(self, image, rng: np.random.Generator) -> np.ndarray:
        self.augmenter.seed_(int(rng.integers(0, 2**63 - 1)))
        out = self.augmenter(image=np.ascontiguousarray(to_rgb_array(image)))
        if out.dtype != np.uint8 or out.ndim != 3 or out.shape[2] != 3:
            raise CorruptionError(f"augmenter {self.name} returned {out.dtype} {out.shape}; expected uint8 [H, W, 3]")
        return out


def parse_augmenter(spec: str):
    """An imgaug augmenter from ``spec``, e.g. ``"GaussianBlur(sigma=(0.5, 1.5))"`` or
    ``"Sequential([Fliplr(0.5), imgcorruptlike.Snow(severity=3)])"``: calls of (dotted) names in
    ``imgaug.augmenters`` with literal arguments (numbers, strings, tuples, lists, dicts, None,
    booleans) or nested calls. CorruptionError names what is not allowed."""
    iaa = import_imgaug()
    try:
        tree = ast.parse(spec.strip(), mode="eval")
    except SyntaxError as err:
        raise CorruptionError(f"augmenter spec {spec!r} is not a Python expression ({err.msg})") from err
    return _evaluate(tree.body, iaa, spec)


def _evaluate(node: ast.AST, iaa, spec: str) -> Any:
    if isinstance(node, ast.Call):
        function = _resolve(node.func, iaa, spec)
        args = [_evaluate(arg, iaa, spec) for arg in node.args]
        kwargs = {kw.arg: _evaluate(kw.value, iaa, spec) for kw in node.keywords if kw.arg is not None}
        if len(kwargs) != len(node.keywords):
            raise CorruptionError(f"augmenter spec {spec!r}: **kwargs are not allowed")
        return function(*args, **kwargs)
    if isinstance(node, (ast.List, ast.Tuple)):
        values = [_evaluate(item, iaa, spec) for item in node.elts]
        return values if isinstance(node, ast.List) else tuple(values)
    if isinstance(node, ast.Dict):
        return {_evaluate(k, iaa, spec): _evaluate(v, iaa, spec) for k, v in zip(node.keys, node.values, strict=True)}
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_evaluate(node.operand, iaa, spec)
    if isinstance(node, ast.Constant):
        return node.value
    raise CorruptionError(
        f"augmenter spec {spec!r}: {ast.unparse(node)!r} is not allowed (only imgaug.augmenters calls and literals)"
    )


def _resolve(node: ast.AST, iaa, spec: str):
    """An Augmenter class named ``X``, ``iaa.X``, ``module.X`` or ``imgaug.augmenters[.module].X``."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.insert(0, node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        raise CorruptionError(f"augmenter spec {spec!r}: {ast.unparse(node)!r} is not a name in imgaug.augmenters")
    parts.insert(0, node.id)
    for prefix in (["imgaug", "augmenters"], ["iaa"]):
        if parts[: len(prefix)] == prefix:
            parts = parts[len(prefix) :]
    target = iaa
    for part in parts:
        target = getattr(target, part, None) if not part.startswith("_") else None
        if target is None:
            break
    if not (isinstance(target, type) and issubclass(target, iaa.meta.Augmenter)) or len(parts) > 2:
        raise CorruptionError(
            f"augmenter spec {spec!r}: {'.'.join(parts)!r} is not an augmenter class of imgaug.augmenters"
        )
    return target


__all__ = ["ImgaugPerturbation", "apply_numpy2_shims", "imgaug_available", "import_imgaug", "parse_augmenter"]
