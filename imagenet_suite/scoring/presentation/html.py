"""Self-contained HTML pages (``report.html``, ``leaderboard.html``): sortable tables and inline SVG figures.

A page is data — :class:`Page` of :class:`Section` s, each with :class:`Table` s (a DataFrame, the direction
↑/↓ of its columns, the columns shown in percent, a note) and :class:`Figure` s (inline SVG from matplotlib,
or the reason it is not drawn: what is missing and which command adds it) — and :func:`render` writes it as
one HTML file with its style and its ~30 lines of sorting script inlined: no network at view time, nothing
beside it, so the file can be mailed or attached to a supplement. Clicking a column header sorts the rows
by that column (numbers as numbers, ascending then descending; a missing value, shown as —, always last).
A table longer than :data:`SHOWN_ROWS` rows shows its first rows and carries the rest as JSON (sorting
sorts all; a button shows all), so a leaderboard of hundreds of runs opens in well under two seconds.
"""

from __future__ import annotations

import contextlib
import html
import io
import json
import math
import pickle
import re
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ...forked import Forks
from .shading import Shading, cell_style, shading_attribute

MISSING = "—"  # one notation for a missing value everywhere; the reason goes in the cell's title or a note
UP, DOWN = "↑", "↓"  # higher is better, lower is better
SHOWN_ROWS = 100  # rows of a table written as HTML; the others wait as JSON until the reader sorts or asks


@dataclass(frozen=True)
class Table:
    """A table of a section: ``frame``'s columns as shown (its index is dropped: put names in a column).

    ``directions``: ``{column: "↑" or "↓"}`` (shown in the header); ``percent``: columns holding fractions,
    shown ×100 with one decimal and ``(%)`` in the header; ``reasons``: ``{(row position, column): why the
    value is missing}`` (the cell's tooltip); ``note``: a sentence under the caption; ``shading``: columns whose
    cells are shaded by their value (:class:`~imagenet_suite.scoring.presentation.shading.Shading`)."""

    name: str
    frame: pd.DataFrame
    directions: Mapping[str, str] = field(default_factory=dict)
    percent: Sequence[str] = ()
    note: str = ""
    reasons: Mapping[tuple[int, str], str] = field(default_factory=dict)
    shading: Shading | None = None


def shaded_matrix(
    name: str, frame: pd.DataFrame, row_name: str, note: str = "", *, percent: bool = True,
    shading: Shading | None = None,
) -> Table:  # fmt: skip
    """``frame`` (rows × columns of numbers, lower is better) as a :class:`Table`: its index the first column,
    ``row_name``, then its columns (named as text), each shaded (``shading``, default :class:`Shading` over them: 0
    to 1, darker is worse) and shown in percent when ``percent``."""
    columns = [str(column) for column in frame.columns]
    shown = frame.set_axis(columns, axis=1).rename_axis(row_name).reset_index()
    return Table(name, shown, dict.fromkeys(columns, DOWN), columns if percent else (), note,
                 shading=Shading(columns) if shading is None else shading)  # fmt: skip


class Figure:
    """A figure of a page: ``svg`` (from :func:`figure_svg`), or ``missing``: what is missing and which command adds
    it. Within :func:`figures_in_processes`, :func:`drawn` gives one whose SVG is still being drawn in another
    process (``drawing``, its Future): reading ``svg`` waits for it. Equal when name, SVG and ``missing`` are."""

    __slots__ = ("_drawing", "_svg", "missing", "name")

    def __init__(self, name: str, svg: str | None = None, missing: str = "", drawing: Future | None = None):
        self.name, self.missing, self._svg, self._drawing = name, missing, svg, drawing

    @property
    def svg(self) -> str | None:
        return self._svg if self._drawing is None else self._drawing.result()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Figure):
            return NotImplemented
        return (self.name, self.svg, self.missing) == (other.name, other.svg, other.missing)

    def __hash__(self) -> int:
        return hash((self.name, self.missing))

    def __repr__(self) -> str:
        state = "drawing" if self._drawing is not None and not self._drawing.done() else f"svg={self.svg is not None}"
        return f"Figure({self.name!r}, {state}, missing={self.missing!r})"


@dataclass
class Section:
    """One part of a page: a paper's tables and figures (``paper``: its authors and year), or another part."""

    title: str
    paper: str = ""
    notes: list[str] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)

    @property
    def anchor(self) -> str:
        return re.sub(r"[^a-z0-9]+", "-", self.title.lower()).strip("-")


@dataclass
class Page:
    title: str
    lead: str
    sections: list[Section]


def figure_svg(figure: Any, name: str = "") -> str:
    """A matplotlib ``Figure`` as an ``<svg>`` element (text kept as text, no date, ids salted by ``name`` so
    that two figures of one page never share one), drawn once
    (:func:`~imagenet_suite.scoring.presentation.figure_files.settled`: the placeholder layout engine
    ``tight_layout()`` leaves is removed from ``figure`` itself)."""
    import matplotlib

    from .figure_files import settled

    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": name or "figure"}):
        settled(figure).savefig(buffer, format="svg", metadata={"Date": None})
    text = buffer.getvalue()
    return text[text.index("<svg") :]


_FORKS: ContextVar[Forks | None] = ContextVar("figure_forks", default=None)


def drawn(name: str, draw: Any, *args: Any, **kwargs: Any) -> Figure:
    """``Figure(name, svg)`` of the matplotlib figure ``draw(*args, **kwargs)`` returns; within
    :func:`figures_in_processes`, drawn in a forked process (the Figure's ``drawing``) while this one goes on."""
    forks = _FORKS.get()
    if forks is not None and forks.forking:
        try:
            sent = pickle.dumps((draw, args, kwargs), protocol=pickle.HIGHEST_PROTOCOL)
        except (pickle.PicklingError, AttributeError, TypeError):  # a lambda, a local function: drawn here
            sent = None
        if sent is not None:
            return Figure(name, drawing=forks.submit(_svg_of_sent, name, sent))
    return Figure(name, svg=_svg_of(name, draw, args, kwargs))


def _svg_of(name: str, draw: Any, args: tuple, kwargs: Mapping[str, Any]) -> str:
    return figure_svg(draw(*args, **kwargs), name)


def _svg_of_sent(name: str, sent: bytes) -> str:
    draw, args, kwargs = pickle.loads(sent)  # pickled by drawn, in the process that forked this one
    return _svg_of(name, draw, args, kwargs)


@contextlib.contextmanager
def figures_in_processes(forking: bool = True) -> Iterator[None]:
    """Within the block, :func:`drawn` draws each figure in processes forked from this one
    (:class:`~imagenet_suite.forked.Forks`: as many as this process may use CPUs; none where processes are not
    forked), so that a page's figures are drawn while its tables are built (matplotlib holds the GIL: threads
    would not help). The drawing function and its arguments go pickled (one that cannot be, a lambda, is drawn
    here); the same SVG as drawn here, byte for byte. Every drawing has ended when the block does. Not
    ``forking`` (too few figures' worth of work to pay for the processes): drawn here."""
    if not forking:
        yield
        return
    with Forks() as forks:
        token = _FORKS.set(forks)
        try:
            yield
        finally:
            _FORKS.reset(token)


def cell_text(value: Any, percent: bool = False) -> tuple[str, str]:
    """``(shown text, sort key)`` of one value: floats with 4 significant digits (``percent``: ×100, one
    decimal), None and NaN as — with an empty sort key (sorted last).

    Example:
        >>> cell_text(0.51849), cell_text(0.51849, percent=True), cell_text(float("nan")), cell_text("resnet")
        (('0.5185', '0.51849'), ('51.8', '0.51849'), ('—', ''), ('resnet', 'resnet'))
    """
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return MISSING, ""
    if isinstance(value, bool):
        return str(value), str(value)
    if isinstance(value, int | float) or hasattr(value, "dtype"):
        number = float(value)
        if math.isnan(number):
            return MISSING, ""
        key = f"{number:.9g}"  # sorts as the number (nine digits: shorter JSON than repr, same order in practice)
        if percent:
            return f"{100 * number:.1f}", key
        if float(number).is_integer() and abs(number) < 1e15:
            return f"{int(number)}", key
        return f"{number:.4g}", key
    return str(value), str(value)


def _header(column: str, table: Table) -> str:
    label = str(column) + (" (%)" if column in table.percent else "")
    direction = table.directions.get(column, "")
    if direction:
        better = "higher" if direction == UP else "lower"
        label += f' <span class="dir" title="{better} is better">{direction}</span>'
    elif not label:
        label = "&nbsp;"
    return label


def _numeric(series: pd.Series) -> bool:
    if isinstance(series.dtype, pd.StringDtype):  # strings or missing: not a number
        return False
    return pd.api.types.is_numeric_dtype(series) or bool(
        series.dropna().map(lambda v: isinstance(v, int | float) and not isinstance(v, bool)).all()
        and series.notna().any()
    )


def _column_cells(values: Sequence[Any], percent: bool) -> tuple[list[str], list[str]]:
    """``(shown texts, sort keys)`` of one column's values, each as :func:`cell_text` gives it: Python floats and
    strings (nearly every cell of a leaderboard) formatted here in one loop, anything else by :func:`cell_text`."""
    shown, keys = [], []
    add_shown, add_key = shown.append, keys.append
    for value in values:
        kind = type(value)
        if kind is str:
            add_shown(value)
            add_key(value)
        elif kind is float:
            if value != value:  # NaN
                add_shown(MISSING)
                add_key("")
                continue
            add_key(f"{value:.9g}")
            if percent:
                add_shown(f"{100 * value:.1f}")
            elif value.is_integer() and abs(value) < 1e15:
                add_shown(f"{int(value)}")
            else:
                add_shown(f"{value:.4g}")
        else:
            text, key = cell_text(value, percent)
            add_shown(text)
            add_key(key)
    return shown, keys


def render_table(table: Table) -> str:
    """One ``<table class="sortable">`` with its caption and note. Only the first :data:`SHOWN_ROWS` rows are
    HTML; a longer table carries all its rows as JSON beside it (per cell ``[shown]`` when its sort key is the
    text shown, else ``[shown, key]``, and the reason it is missing third when there is one), drawn by the
    script when the reader sorts or asks for all (a page of 300 runs stays quick to open). Cells are formatted
    column by column (:func:`_column_cells`), never through a per-cell call."""
    frame = table.frame
    columns = list(frame.columns)
    numeric = {column: _numeric(frame[column]) for column in columns}
    head = "".join(
        f'<th class="{"num" if numeric[c] else "text"}" scope="col">{_header(c, table) if isinstance(c, str) else c}'
        "</th>"
        for c in columns
    )
    percent = set(table.percent)
    # per column, its values as itertuples hands them out (Python scalars), then its texts and sort keys
    cells = [_column_cells(frame.iloc[:, k].tolist(), column in percent) for k, column in enumerate(columns)]
    reasons: dict[int, dict[int, str]] = {}
    for (position, column), reason in table.reasons.items():
        if reason:
            for k, name in enumerate(columns):
                if name == column:
                    reasons.setdefault(k, {})[position] = reason
    count = len(frame)
    shading = table.shading
    shaded = set() if shading is None else {k for k, column in enumerate(columns) if column in shading.columns}
    rows = []
    for position in range(min(count, SHOWN_ROWS)):
        html_cells = []
        for k, column in enumerate(columns):
            shown, key = cells[k][0][position], cells[k][1][position]
            reason = reasons.get(k, {}).get(position, "")
            title = f' title="{html.escape(reason)}"' if reason else ""
            kind = "missing" if shown == MISSING else "num" if numeric[column] else "text"
            style = cell_style(key, shading) if shading is not None and k in shaded else ""
            html_cells.append(
                f'<td data-sort="{html.escape(key)}" class="{kind}"{title}{style}>{html.escape(shown)}</td>'
            )
        rows.append("<tr>" + "".join(html_cells) + "</tr>")
    note = f'<p class="note">{html.escape(table.note)}</p>' if table.note else ""
    more = ""
    if count > SHOWN_ROWS:
        compact = [[[shown] if shown == key else [shown, key] for shown, key in zip(*column, strict=True)]
                   for column in cells]  # fmt: skip
        for k, found in reasons.items():
            for position, reason in found.items():
                if 0 <= position < count:
                    compact[k][position] = [cells[k][0][position], cells[k][1][position], reason]
        text = json.dumps([list(row) for row in zip(*compact, strict=True)] if columns else [[]] * count,
                          ensure_ascii=False, separators=(",", ":")).replace("</", "<\\/")  # fmt: skip
        more = (
            f'<script type="application/json" class="rows">{text}</script><p class="more">The first {SHOWN_ROWS} of '
            f'{count} rows (sorting sorts all of them). <button type="button">Show all {count} rows</button></p>'
        )
    shade = f' data-shade="{html.escape(shading_attribute(shading, columns))}"' if shading is not None else ""
    return (
        f'<div class="table"><h3>{html.escape(table.name)}</h3>{note}'
        f'<div class="scroll"><table class="sortable"{shade}><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>{more}</div>"
    )


def render_figure(figure: Figure) -> str:
    if figure.svg is None:
        return (
            f'<figure class="missing-figure"><figcaption>{html.escape(figure.name)}</figcaption>'
            f'<p class="missing-note">Not drawn: {html.escape(figure.missing)}</p></figure>'
        )
    return f'<figure class="plot"><figcaption>{html.escape(figure.name)}</figcaption>{figure.svg}</figure>'


def render_section(section: Section, tables: str | None = None) -> str:
    """One section's HTML; ``tables``: its tables' HTML, if already rendered."""
    paper = f'<p class="paper">{html.escape(section.paper)}</p>' if section.paper else ""
    notes = "".join(f'<p class="note">{html.escape(note)}</p>' for note in section.notes)
    tables = "".join(map(render_table, section.tables)) if tables is None else tables
    body = tables + "".join(map(render_figure, section.figures))
    return f'<section id="{section.anchor}"><h2>{html.escape(section.title)}</h2>{paper}{notes}{body}</section>'


def render(page: Page) -> str:
    """The whole HTML document of ``page``: every section's tables first, then its figures (waiting for any still
    being drawn: :func:`figures_in_processes`), so that the tables are written while the figures are drawn."""
    contents = "".join(f'<li><a href="#{s.anchor}">{html.escape(s.title)}</a></li>' for s in page.sections)
    tables = ["".join(map(render_table, section.tables)) for section in page.sections]
    sections = "".join(map(render_section, page.sections, tables))
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(page.title)}</title><style>{STYLE}</style></head><body>"
        f"<header><h1>{html.escape(page.title)}</h1><p>{html.escape(page.lead)}</p>"
        f"<nav><ol>{contents}</ol></nav></header><main>{sections}</main>"
        f"<script>{SCRIPT}</script></body></html>\n"
    )


STYLE = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1d1d1f;background:#fafafa}
header{background:#243447;color:#fff;padding:1em 2em}header a{color:#cfe3ff}header p{margin:.3em 0}
nav ol{columns:3;margin:.5em 0 0;padding-left:1.2em}main{padding:0 2em 2em}
section{background:#fff;border:1px solid #e3e3e3;border-radius:6px;margin:1.2em 0;padding:.2em 1.2em 1em}
h2{border-bottom:2px solid #243447;padding-bottom:.2em}h3{margin:1em 0 .3em;font-size:1.05em}
.paper{color:#555;font-style:italic;margin-top:-.5em}.note{color:#444;max-width:70em}
.scroll{overflow-x:auto;max-height:36em;overflow-y:auto}
table{border-collapse:collapse;font-variant-numeric:tabular-nums;font-size:13px}
th,td{border-bottom:1px solid #e6e6e6;padding:.25em .6em;text-align:left;white-space:nowrap}
th{position:sticky;top:0;background:#eef2f7;cursor:pointer;user-select:none}
th.num,td.num{text-align:right}th:hover{background:#dde6f0}
th[aria-sort=ascending]::after{content:" ▲";font-size:.8em}th[aria-sort=descending]::after{content:" ▼";font-size:.8em}
.dir{color:#0b6e4f;font-weight:bold}td.missing{color:#999;text-align:center}
figure{display:inline-block;vertical-align:top;margin:1em 1em 0 0;max-width:100%}figure svg{max-width:100%;height:auto}
figcaption{font-weight:600;margin-bottom:.3em}
.missing-figure{border:1px dashed #bbb;border-radius:4px;padding:.6em 1em;background:#fcfcfc;max-width:40em}
.missing-note{color:#8a4b00;margin:.2em 0}.more{color:#555;font-size:.9em}
section{content-visibility:auto;contain-intrinsic-size:auto 900px}
"""

SCRIPT = """
function escaped(text) {
  return String(text).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}
document.querySelectorAll('table.sortable').forEach(function (table) {
  var headers = table.tHead.rows[0].cells, body = table.tBodies[0], box = table.parentNode.parentNode;
  var source = box.querySelector('script.rows'), button = box.querySelector('p.more button');
  var data = null, limit = body.rows.length, shade = table.dataset.shade ? JSON.parse(table.dataset.shade) : null;
  function shaded(column, sortKey) {  // the cell's colours, as shading.cell_style writes them
    if (!shade || shade.c.indexOf(column) < 0 || sortKey === '') { return ''; }
    var value = parseFloat(sortKey), n = shade.p.length;
    if (!isFinite(value)) { return ''; }
    var i = Math.min(n - 1, Math.max(0, Math.floor((value - shade.lo) / (shade.hi - shade.lo) * (n - 1) + 0.5)));
    return ' style="background:' + shade.p[i] + ';color:' + (shade.w[i] === '1' ? '#fff' : '#000') + '"';
  }
  function rows() {  // every row: [[shown, sort key, why missing], ...], from the JSON or the table itself
    if (data === null) {
      data = source ? JSON.parse(source.textContent) : Array.prototype.map.call(body.rows, function (row) {
        return Array.prototype.map.call(row.cells, function (cell) {
          return [cell.textContent, cell.getAttribute('data-sort'), cell.getAttribute('title') || ''];
        });
      });
    }
    return data;
  }
  function key(cell) { return cell.length > 1 ? cell[1] : cell[0]; }
  function draw() {
    body.innerHTML = rows().slice(0, limit).map(function (row) {
      return '<tr>' + row.map(function (cell, i) {
        var kind = key(cell) === '' ? 'missing' : headers[i].classList.contains('num') ? 'num' : 'text';
        var title = cell[2] ? ' title="' + escaped(cell[2]) + '"' : '';
        return '<td data-sort="' + escaped(key(cell)) + '" class="' + kind + '"' + title + shaded(i, key(cell)) + '>' +
          escaped(cell[0]) + '</td>';
      }).join('') + '</tr>';
    }).join('');
  }
  if (button) {
    button.addEventListener('click', function () { limit = rows().length; draw(); button.parentNode.remove(); });
  }
  Array.prototype.forEach.call(headers, function (th, column) {
    th.addEventListener('click', function () {
      var ascending = th.getAttribute('aria-sort') !== 'ascending', numeric = th.classList.contains('num');
      Array.prototype.forEach.call(headers, function (h) { h.removeAttribute('aria-sort'); });
      th.setAttribute('aria-sort', ascending ? 'ascending' : 'descending');
      rows().sort(function (a, b) {
        var x = key(a[column]), y = key(b[column]);
        if (x === '' || y === '') { return (x === '') - (y === ''); }  // missing values last, either way
        var order = numeric ? parseFloat(x) - parseFloat(y) : x.localeCompare(y);
        return ascending ? order : -order;
      });
      draw();
    });
  });
});
"""


__all__ = [
    "DOWN",
    "MISSING",
    "UP",
    "Figure",
    "Page",
    "Section",
    "Table",
    "cell_text",
    "drawn",
    "figure_svg",
    "figures_in_processes",
    "render",
    "render_table",
    "shaded_matrix",
]
