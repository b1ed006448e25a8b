"""A matplotlib figure written once: as a PNG file (:func:`save_png`) or as SVG
(:func:`~imagenet_suite.scoring.presentation.html.figure_svg`, an ``<svg>`` element for a page; :func:`svg_file`
makes it a file's bytes), each drawn once.

A figure laid out by ``tight_layout()`` keeps a placeholder layout engine that does nothing, and ``savefig`` draws a
figure that has an engine twice, the first time only to run the engine. :func:`settled` removes it first (unless
the rc settings lay figures out at save time, when the engine is theirs): the same file, in about 60 % of the time
where a figure is mostly text (bar labels, tick labels).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def settled(figure: Any) -> Any:
    """``figure`` (a matplotlib Figure) without the placeholder layout engine ``tight_layout()`` left, so that saving
    it draws it once; returned. A figure whose engine is a real one, or one laid out by the rc settings at save time,
    is left as it is."""
    import matplotlib
    from matplotlib.layout_engine import PlaceHolderLayoutEngine

    engine_from_rc = matplotlib.rcParams["figure.autolayout"] or matplotlib.rcParams["figure.constrained_layout.use"]
    if isinstance(figure.get_layout_engine(), PlaceHolderLayoutEngine) and not engine_from_rc:
        figure.set_layout_engine(None)  # None gives no engine where the rc settings ask for none
    return figure


def save_png(figure: Any, path: str | Path, dpi: float) -> Path:
    """Write ``figure`` as a PNG file at ``path`` (``dpi`` dots per inch), drawn once (:func:`settled`); returns the
    path. The bytes are those ``figure.savefig(path, dpi=dpi)`` writes."""
    settled(figure).savefig(path, dpi=dpi)
    return Path(path)


SVG_DECLARATION = '<?xml version="1.0" encoding="utf-8" standalone="no"?>\n'


def svg_file(element: str) -> bytes:
    """The bytes of a standalone ``.svg`` file holding ``element``, an ``<svg>`` element as
    :func:`~imagenet_suite.scoring.presentation.html.figure_svg` gives it (a page's inline figure): the XML
    declaration, then the element, UTF-8.

    Example:
        >>> svg_file('<svg xmlns="http://www.w3.org/2000/svg"/>')[:38]
        b'<?xml version="1.0" encoding="utf-8" s'
    """
    return (SVG_DECLARATION + element).encode()


__all__ = ["save_png", "settled", "svg_file"]
