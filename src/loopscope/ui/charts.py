"""Plotly figures of replay results: pure functions, no Streamlit, unit-testable.

Every marker is coloured **and** shaped by detector, and warnings are hollow while refusals are
filled, so nothing depends on colour alone. Traces are built from numeric arrays, one trace per
detector × verdict (never one per marker), so the corpus overview stays fast for thousands of
sessions.
"""

from __future__ import annotations

import functools
import hashlib
import operator
import textwrap
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from loopscope.engines import CounterSeries, Marker, SessionReplay, Step
from loopscope.engines.base import RunColumns


@dataclass(frozen=True, slots=True)
class DetectorStyle:
    title: str
    color: str
    symbol: str


# Okabe–Ito colours (distinguishable with the common colour-vision deficiencies), then Tol's,
# each paired with its own marker shape; detectors take them in registry order (engine by
# engine). Every shape has a filled (refused) and a hollow (warned) form and none repeats, so
# about 35 detectors stay apart by shape alone; past the 18 colours, colours repeat (the shape
# still tells them apart). "pentagon" is kept for an unknown detector.
PALETTE: tuple[tuple[str, str], ...] = (
    ("#D55E00", "diamond"), ("#CC79A7", "star"), ("#0072B2", "circle"),
    ("#009E73", "square"), ("#E69F00", "triangle-up"), ("#56B4E9", "hexagram"),
    ("#000000", "x"), ("#882255", "cross"), ("#117733", "triangle-down"),
    ("#332288", "star-diamond"), ("#AA4499", "hourglass"), ("#44AA99", "bowtie"),
    ("#999933", "triangle-left"), ("#661100", "triangle-right"), ("#6699CC", "star-square"),
    ("#888888", "diamond-tall"), ("#DDCC77", "square-x"), ("#1f1f1f", "circle-x"),
    ("#D55E00", "hexagon"), ("#0072B2", "star-triangle-up"), ("#009E73", "diamond-wide"),
    ("#CC79A7", "octagon"), ("#E69F00", "star-triangle-down"), ("#56B4E9", "circle-cross"),
    ("#882255", "triangle-ne"), ("#117733", "square-cross"), ("#332288", "triangle-sw"),
    ("#AA4499", "diamond-cross"), ("#44AA99", "hexagon2"), ("#999933", "triangle-se"),
    ("#661100", "diamond-x"), ("#6699CC", "triangle-nw"), ("#000000", "arrow-up"),
    ("#D55E00", "arrow-down"), ("#0072B2", "arrow-left"), ("#009E73", "arrow-right"),
)


def detector_styles() -> dict[str, DetectorStyle]:
    """Detector id → its title (the engine's plain label), colour and shape, for every engine
    in the registry (plug-ins included)."""
    from loopscope.engines import engine_names

    return _styles_for(engine_names())


@functools.cache
def _styles_for(names: tuple[str, ...]) -> dict[str, DetectorStyle]:
    from loopscope.engines import get_engine

    ids: list[tuple[str, str]] = []
    for engine in map(get_engine, names):
        for info in engine.detectors:
            if info.id not in {i for i, _ in ids}:
                ids.append((info.id, info.label))
    return styles_for_detectors(ids)


def styles_for_detectors(detectors: Sequence[tuple[str, str]]) -> dict[str, DetectorStyle]:
    """``(id, label)`` → a style each, in order: a shape of its own for the first
    ``len(PALETTE)`` detectors (after that shapes repeat; the legend and hover still name
    the detector)."""
    styles: dict[str, DetectorStyle] = {}
    for n, (detector, label) in enumerate(detectors):
        color, symbol = PALETTE[n % len(PALETTE)]
        styles[detector] = DetectorStyle(label, color, symbol)
    return styles


UNKNOWN_STYLE = DetectorStyle("other", "#555555", "pentagon")
PASS_COLOR = "#8C8C8C"
DIVERGENCE_FILL = "rgba(120,120,120,0.18)"
DIVERGENCE_LINE = "rgba(90,90,90,0.55)"
SESSION_BAR = "rgba(170,170,170,0.22)"

VERDICT_ORDER = ("refuse", "warn")
WEBGL_FROM_MARKERS = 1_000_000
"""Above this many markers in one engine's column, the overview draws them with WebGL.
Effectively off: in headless Chromium without a GPU (CI, the benchmark) software WebGL was
measured 3-4x slower than SVG for 9,000 markers."""
WEBGL_MAX_HEIGHT = 8000
HOVER_NAMES_UP_TO = 5000
"""Above this many run markers in one engine's column, their hover shows numbers only (names
are on the axis)."""


def style_of(detector: str | None) -> DetectorStyle:
    return detector_styles().get(detector or "", UNKNOWN_STYLE)


def marker_symbol(detector: str | None, verdict: str) -> str:
    """Filled shape for a refusal, the hollow variant for a warning."""
    base = style_of(detector).symbol
    return base if verdict == "refuse" else f"{base}-open"


# --------------------------------------------------------------------------- positions


def step_positions(steps: Sequence[Step]) -> list[float]:
    """The x (call index) of each step. A step without a call (a gglib prose reply) sits
    half-way before the next call, i.e. after every call made before it."""
    xs: list[float] = []
    calls_so_far = 0
    for s in steps:
        if s.call is not None:
            xs.append(float(s.call))
            calls_so_far = max(calls_so_far, s.call + max(len(s.tools), 1))
        else:
            xs.append(calls_so_far - 0.5)
    return xs


def divergence_x(replay: SessionReplay, xs: Sequence[float] | None = None) -> float | None:
    """The x of the first refusal, or None."""
    if replay.first_refusal is None:
        return None
    xs = xs if xs is not None else step_positions(replay.steps)
    for s, x in zip(replay.steps, xs, strict=True):
        if s.verdict == "refuse":
            return x
    return None


# --------------------------------------------------------------------------- 1-based call axis

_TICK_STEPS = (1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 2500, 5000, 10_000,
               20_000, 50_000, 100_000)


def call_ticks(n_calls: float, target: int = 8) -> tuple[list[float], list[str]]:
    """Tick positions on a tool-call axis (x is the 0-based call index) labelled from 1, as
    people count: call 1 sits at x = 0."""
    n = max(int(n_calls), 1)
    step = next((s for s in _TICK_STEPS if s >= n / target), _TICK_STEPS[-1])
    labels = sorted({1, *range(step, n + 1, step)})
    return [float(v - 1) for v in labels], [str(v) for v in labels]


# --------------------------------------------------------------------------- corpus overview


@dataclass(frozen=True, slots=True)
class OverviewRow:
    """One session in the corpus overview, with each engine's replay."""

    name: str
    replays: Mapping[str, SessionReplay]
    """Engine name → the session's replay under the current configuration."""
    calls: int
    """Number of tool calls: the row's length."""
    label: str | None = None
    """``loop``, ``ok`` or None (unlabelled)."""


SORT_KEYS = ("refusals", "label", "length", "name")
SORT_TITLES = {
    "refusals": "Most refused first",
    "label": "By label (loops, good work, unlabelled)",
    "length": "Longest first",
    "name": "By name",
}


def sort_rows(
    rows: Sequence[OverviewRow], by: str = "refusals", engines: Sequence[str] | None = None
) -> list[OverviewRow]:
    """Rows in display order (top first); refusals are counted over ``engines`` (default all)."""
    names = sorted({e for r in rows for e in r.replays}) if engines is None else list(engines)
    order = row_order(
        [r.name for r in rows], [r.calls for r in rows], [r.label for r in rows],
        {e: [r.replays.get(e) for r in rows] for e in names}, by,
    )
    return [rows[i] for i in order]


def row_order(
    names: Sequence[str], calls: Sequence[int], labels: Sequence[str | None],
    replays: Mapping[str, Sequence[SessionReplay | None]], by: str = "refusals",
) -> list[int]:
    """The display order (top first) of sessions given by columns: the indices, sorted.

    ``replays``: engine → each session's replay (None: that engine did not run it); refusals
    and warnings are counted over these engines. Columns rather than :class:`OverviewRow`s: the
    overview sorts every session on each slider move but draws only the first few dozen, so it
    builds rows for those alone.
    """
    columns = list(replays.values())
    indices = range(len(names))
    if by in ("refusals", "label") and columns and all(isinstance(c, RunColumns)
                                                       for c in columns):
        return _row_order_columns(names, labels, columns, by)  # type: ignore[arg-type]
    if by == "refusals":
        refused = [0] * len(names)
        warned = [0] * len(names)
        any_refusal = [False] * len(names)
        for column in columns:
            for i, x in enumerate(column):
                if x is None:
                    continue
                # The counts are free for replays that neither refused nor warned.
                if x.first_refusal is not None:
                    any_refusal[i] = True
                    refused[i] += x.refusal_count
                if x.warned:
                    warned[i] += x.warning_count
        keys: list[Any] = list(zip(map(operator.not_, any_refusal), map(operator.neg, refused),
                                   map(operator.neg, warned), names, strict=True))
    elif by == "label":
        label_rank = {"loop": 0, "ok": 1}
        keys = [
            (label_rank.get(labels[i] or "", 2),
             all(c[i] is None or c[i].first_refusal is None for c in columns),  # type: ignore[union-attr]
             names[i])
            for i in indices
        ]
    elif by == "length":
        keys = list(zip(map(operator.neg, calls), names, strict=True))
    elif by == "name":
        keys = list(names)
    else:
        raise ValueError(f"unknown sort key {by!r}")
    return sorted(indices, key=keys.__getitem__)


def _row_order_columns(names: Sequence[str], labels: Sequence[str | None],
                      columns: Sequence[RunColumns], by: str) -> list[int]:
    """:func:`row_order` read off ``run_many``'s columns: the same keys, sorted by numpy (a
    stable sort, ties in session order as :func:`sorted` leaves them)."""
    import numpy as np

    rank = name_ranks(names)
    refused_any = np.zeros(len(names), dtype=np.bool_)
    for c in columns:
        refused_any |= c.refused
    if by == "refusals":
        refused = sum(c.refusal_counts for c in columns)
        warned = sum(c.warning_counts for c in columns)
        keys: tuple[Any, ...] = (rank, -warned, -refused, ~refused_any)  # last key first
    else:
        label_rank = {"loop": 0, "ok": 1}
        labelled = np.array([label_rank.get(label or "", 2) for label in labels], dtype=np.int8)
        keys = (rank, ~refused_any, labelled)
    order: list[int] = np.lexsort(keys).tolist()
    return order


_NAME_RANKS: dict[int, tuple[Sequence[str], Any]] = {}


def name_ranks(names: Sequence[str]) -> Any:
    """Each name's place in name order (ties by position); kept for the corpus's own list of
    names, which does not change."""
    import numpy as np

    found = _NAME_RANKS.get(id(names))
    if found is not None and found[0] is names:
        return found[1]
    order = sorted(range(len(names)), key=names.__getitem__)
    rank = np.empty(len(names), dtype=np.int64)
    rank[order] = np.arange(len(names))
    if len(_NAME_RANKS) > 8:
        _NAME_RANKS.clear()
    _NAME_RANKS[id(names)] = (names, rank)
    return rank


LABEL_MARKS = {"loop": "loop", "ok": "good"}


ROW_TITLE_CHAR_PX = 7.0
"""Room per character of a row title (13 px sans-serif averages 6-7 px)."""


def _row_title_margin(titles: Sequence[str]) -> int:
    """The left margin that fits the longest row title.

    Set here rather than with Plotly's ``automargin``, which measures every label after a first
    draw and then draws the whole chart again: a third of the browser's time per update."""
    return 16 + round(ROW_TITLE_CHAR_PX * max((len(t) for t in titles), default=0))


def row_title(row: OverviewRow, limit: int = 48) -> str:
    name = row.name if len(row.name) <= limit else "…" + row.name[-(limit - 1):]
    mark = LABEL_MARKS.get(row.label or "")
    return _esc(f"{name} [{mark}]" if mark else name, limit + 8)


def engine_title(name: str) -> str:
    from loopscope.engines import get_engine

    return get_engine(name).title


OVERVIEW_MARGIN_TOP = 30
OVERVIEW_MARGIN_BOTTOM = 40
ROW_PAD = 0.3
"""Room above the first row and below the last, in rows."""

BAR_WIDTH = 0.6
"""Row bars' thickness in rows. Set explicitly: Plotly sizes a bar by the smallest gap between
the bars of its trace, so the divergence bars of two refused sessions five rows apart were
drawn five rows tall, covering sessions that were never refused."""


def overview_figure(
    rows: Sequence[OverviewRow],
    engines: Sequence[str] | None = None,
    *,
    row_height: int = 26,
    name_limit: int = 48,
) -> go.Figure:
    """One row per session (top = first), one column per engine, x = call index, a marker at
    every warn/refuse. A row's name is cut to its last ``name_limit`` characters (the whole
    name is in the markers' hover and the table).

    Per engine column, the traces are: session extents (bar), after-divergence shading
    (hatched bar), then per detector × verdict its runs of consecutive flagged steps, from a
    run's first step to its last (a solid band for refusals, a dotted line for warnings), and
    a shaped marker where each run starts. Rows are
    shared across the columns, so the same session sits on the same line for every engine.
    Each trace's ``meta`` says what it draws (:func:`trace_info`).

    The figure is written as one plain spec and wrapped without plotly.py checking it again
    (:func:`_figure_of_spec`): building it trace by trace through
    ``make_subplots``/``add_trace``/``update_*`` validated every property on each call and
    cost several times more, on every slider move; validating the finished spec once was
    still half of building it.

    The browser draws it once per change, not twice (see :func:`_drawn_once`): nothing in it
    looks changed to Plotly when Streamlit copies it after the first draw.
    """
    if engines is None:  # every engine the rows have a replay of, in registry order
        from loopscope.engines import engine_names

        present = {e for r in rows for e in r.replays}
        engines = [e for e in engine_names() if e in present]
    n = len(rows)
    ys = list(range(n))
    lengths = [max(r.calls, 1) for r in rows]
    bases = [-0.5] * n
    height = _overview_height(n, row_height)
    rows_shown = (n - 0.5 + ROW_PAD, -0.5 - ROW_PAD)  # the y range: top row first
    px_per_row = (height - OVERVIEW_MARGIN_TOP - OVERVIEW_MARGIN_BOTTOM) / (
        rows_shown[0] - rows_shown[1])
    longest = max(lengths, default=1)
    tickvals, ticktext = call_ticks(longest, target=6)
    gap = 0.04
    width = (1 - gap * (len(engines) - 1)) / max(len(engines), 1)
    data: list[dict[str, Any]] = []
    layout: dict[str, Any] = {"annotations": []}
    for col, engine in enumerate(engines, start=1):
        suffix = "" if col == 1 else str(col)
        axes = {"xaxis": f"x{suffix}", "yaxis": f"y{suffix}"}
        left = (col - 1) * (width + gap)
        # ``ticklabeloverflow="allow"``: Plotly's default for these axes measures every tick
        # label on every draw to hide those spilling out of the chart (a third of a draw, with
        # 50 row names); the margin is sized to fit them already.
        layout[f"xaxis{suffix}"] = {
            "anchor": f"y{suffix}", "domain": [left, left + width],
            "title": {"text": "tool call (from 1)"},
            "zeroline": False, "gridcolor": "#e6e6e6", "range": [-0.6, float(longest)],
            "tickmode": "array", "tickvals": tickvals, "ticktext": ticktext,
            "ticklabeloverflow": "allow",
        }
        # Rows top down, each one unit tall: a set range rather than ``autorange="reversed"``,
        # which Plotly recomputes (and redraws every trace for) when Streamlit copies the
        # figure after its first draw (and which left two rows' height empty above the first
        # row and below the last).
        layout[f"yaxis{suffix}"] = {
            "anchor": f"x{suffix}", "domain": [0.0, 1.0], "tickmode": "array", "tickvals": ys,
            "range": list(rows_shown), "autorange": False,
            "showgrid": False, "zeroline": False, "automargin": False,
            "tickfont": {"color": "#1f1f1f"}, "ticklabeloverflow": "allow",
        }
        if col > 1:  # rows are shared: one set of row names, on the left
            layout[f"yaxis{suffix}"].update(matches="y", showticklabels=False)
        layout["annotations"].append({
            "text": engine_title(engine), "x": left + width / 2, "y": 1.0,
            "xref": "paper", "yref": "paper", "xanchor": "center", "yanchor": "bottom",
            "showarrow": False, "font": {"size": 16},
        })
        data.append({
            "type": "bar", "name": "session (calls)", "orientation": "h", "y": ys, "x": lengths,
            "base": bases, "width": BAR_WIDTH,
            "marker": {"color": SESSION_BAR, "line": {"width": 0}},
            "hoverinfo": "skip", "showlegend": False, "meta": _meta(engine, "extent"),
            **axes,
        })
        div_y: list[int] = []
        div_base: list[float] = []
        div_len: list[float] = []
        groups: dict[tuple[str, str], _MarkerGroup] = defaultdict(_MarkerGroup)
        for i, row in enumerate(rows):
            replay = row.replays.get(engine)
            if replay is None:
                continue
            first = _add_runs(groups, replay.markers, i)
            if first is not None:
                div_y.append(i)
                div_base.append(first + 0.5)
                div_len.append(max(row.calls - 1 - first, 0.5))
        data.append({
            "type": "bar", "name": "after divergence (would not have happened)",
            "orientation": "h", "y": div_y, "x": div_len, "base": div_base, "width": BAR_WIDTH,
            "marker": {
                "color": DIVERGENCE_FILL,
                "line": {"color": DIVERGENCE_LINE, "width": 1},
                "pattern": {"shape": "/", "fgcolor": DIVERGENCE_LINE, "size": 6},
            },
            "hoverinfo": "skip", "legendgroup": "divergence", "showlegend": col == 1,
            "meta": _meta(engine, "divergence"), **axes,
        })
        starts_total = sum(len(g.starts) for g in groups.values())
        # Thousands of SVG markers make the browser the bottleneck; WebGL draws them in one
        # pass. A WebGL canvas has a size limit, so very tall charts stay SVG.
        marker_type = "scattergl" if (
            starts_total > WEBGL_FROM_MARKERS and height <= WEBGL_MAX_HEIGHT) else "scatter"
        names = starts_total <= HOVER_NAMES_UP_TO
        for detector, verdict in _ordered_groups(groups):
            g = groups[(detector, verdict)]
            data.extend(_detector_traces(g, detector, verdict, engine, rows, names, marker_type,
                                         axes, px_per_row))
    titles = [row_title(r, name_limit) for r in rows]
    named: set[str] = set()
    for t in data:  # one legend entry per detector × verdict, whichever column has it first
        if t.get("mode") == "markers":
            t["showlegend"] = t["name"] not in named
            named.add(t["name"])
    layout.update(
        barmode="overlay",
        height=height,
        margin={"l": _row_title_margin(titles), "r": 10, "t": OVERVIEW_MARGIN_TOP,
                "b": OVERVIEW_MARGIN_BOTTOM},
        # The legend is drawn apart, in columns across the page (legend_figure): Plotly's own
        # horizontal legend only spans the plot area, which the row titles narrow, so it put
        # one entry per line — as tall as a short chart.
        showlegend=False,
        # A white page with no template: validating (and copying) the full "plotly_white"
        # template was half the cost of building this figure, on every slider move; the few
        # things it gave are set here and on the axes.
        template=_PLAIN,
        plot_bgcolor="white",
        paper_bgcolor="white",
        hoverlabel={"align": "left"},
        font={"color": "#1f1f1f", "size": 13},
        **SELECT_POINTS,
        **_drawn_once(data, titles),
    )
    layout["yaxis"]["ticktext"] = titles
    return _figure_of_spec({"data": data, "layout": layout})


_PLAIN: dict[str, Any] = {}
"""An empty template: keeps plotly.py from applying (and validating) its default one."""


def _drawn_once(data: Sequence[Mapping[str, Any]], *more: Any) -> dict[str, Any]:
    """The layout's ``datarevision``, which keeps the browser from drawing a figure twice per
    change (with no template, set ranges and plain lists: see below): a digest of the
    figure's arrays (``data``'s and ``more``), so it changes whenever they do.

    Streamlit (1.67) mounts a new chart element whenever the figure changes (the element's id
    hashes the figure) and Plotly draws it; then the element copies the figure (a JSON round
    trip), for a chart with ``on_select`` sets the click and drag modes, and hands the copy to
    ``Plotly.react``. Plotly redraws every trace unless its comparison of the two finds
    nothing changed, and it does find changes in: 1-D numpy arrays (sent base64-encoded,
    decoded to typed arrays it never finds equal), any array unless ``datarevision`` is set,
    objects in ``meta`` and in the template, modes it did not have, and axes it ranges itself.
    That second draw was as long as the first. So: 1-D arrays are lists (a 2-D numpy array
    decodes to a list of rows, compared as lists are), traces say what they are in a string
    (``meta``), the template is dropped (after plotly.py has built the figure with an empty
    one), axes have set ranges, and the overview sets the modes Streamlit sets for point
    selection. A browser test counts what Plotly changes in the drawn chart on that copy.
    """
    digest = hashlib.blake2b(orjson.dumps(
        [*more, *([t.get(k) for k in _DATA_KEYS] for t in data)],
        option=orjson.OPT_SERIALIZE_NUMPY), digest_size=8).hexdigest()
    return {"datarevision": digest}


_DATA_KEYS = ("meta", "x", "y", "base", "customdata", "text")

SELECT_POINTS = {"clickmode": "event+select", "dragmode": "pan", "hovermode": "closest"}
"""What Streamlit sets on a chart that selects points (``on_select``), unless the figure does:
set in the figure, so that Streamlit's copy of it changes nothing."""


def _figure_of_spec(spec: dict[str, Any], *, validate: bool = False) -> go.Figure:
    """The figure of a plain spec this module wrote (``{"data": [...], "layout": {...}}``),
    without a template (see :func:`_drawn_once`).

    plotly.py checks and coerces every property of a figure it is given (``validate``), a
    third of the overview's cost on each slider move at 50 rows × 4 guards. The specs here
    are already written as Plotly wants them (plain lists, strings, numbers, known keys), so
    they are wrapped unchecked (``_validate=False``, the switch plotly.py uses for its own
    templates). Tests build the figures both ways and require the same JSON, so a spec that
    would need coercing, or a plotly.py that changes the switch, fails there."""
    if validate:
        return _without_template(go.Figure(spec))
    fig = go.Figure(spec, _validate=False)
    # The template goes as from a checked figure (its key removed, not left ``null``, which
    # plotly.py's own HTML export cannot read): the layout alone checked again for it, as
    # plotly.py itself switches checking on and off around its default template.
    fig.layout._validate = True
    return _without_template(fig)


def _without_template(fig: go.Figure) -> go.Figure:
    """``fig`` with no template at all, not even an empty one (see :func:`_drawn_once`); its
    look does not change: the empty template set nothing."""
    fig.layout.template = None
    return fig


def _meta(engine: str, role: str, verdict: str | None = None, detector: str | None = None) -> str:
    """A trace's ``meta``: what it draws, as one string (see :func:`trace_info`)."""
    return "/".join([engine, role] + ([verdict, detector or ""] if verdict else []))


@dataclass(frozen=True, slots=True)
class TraceInfo:
    """What one trace of the overview draws."""

    engine: str
    role: str
    """``extent`` (session bars), ``divergence`` (hatched bars), ``run`` (the runs longer than
    one step: a band per run of refusals, a dotted line per run of warnings) or ``start`` (the
    shaped markers where runs start)."""
    verdict: str | None = None
    detector: str | None = None


def trace_info(trace: Any) -> TraceInfo | None:
    """What an overview trace draws, read from its ``meta``: ``engine/role`` or
    ``engine/role/verdict/detector`` (None: not an overview trace)."""
    meta = trace.get("meta") if isinstance(trace, Mapping) else getattr(trace, "meta", None)
    parts = meta.split("/", 3) if isinstance(meta, str) else []
    if len(parts) == 2:
        return TraceInfo(parts[0], parts[1])
    if len(parts) == 4:
        return TraceInfo(parts[0], parts[1], parts[2], parts[3])
    return None


def _detector_traces(g: _MarkerGroup, detector: str, verdict: str, engine: str,
                     rows: Sequence[OverviewRow], names: bool, marker_type: str,
                     axes: Mapping[str, str], px_per_row: float) -> list[dict[str, Any]]:
    """The traces of one detector × verdict in one engine column: its runs (when a run is
    longer than one step) and the marker where each run starts."""
    style = style_of(detector)
    title = f"{style.title} — {'refused' if verdict == 'refuse' else 'warned'}"
    refuse = verdict == "refuse"
    traces = []
    if g.runs:
        # The runs, from each run's first step to its last, all in one trace. Not hoverable: a
        # run cannot be selected, and at its first step it would win the hover (and the click
        # that opens the session) from the marker, whose hover tells where the run starts and
        # ends.
        run: dict[str, Any] = {
            "type": "scatter", "name": title, "legendgroup": title, "showlegend": False,
            "hoverinfo": "skip", "meta": _meta(engine, "run", verdict, detector), **axes,
        }
        if refuse:
            # A solid band as thick as a 5 px line, the runs' rectangles filled as one SVG
            # path. (A line breaks into an SVG path per run, each styled on its own: a fifth
            # of the chart's drawing time, refusals being most of the runs.)
            half = REFUSED_RUN_PX / 2 / px_per_row
            edges = {r: (round(r - half, 4), round(r + half, 4)) for _, _, r in g.runs}
            run.update(mode="none", fill="toself", fillcolor=style.color,
                       x=[v for x0, x1, _ in g.runs for v in (x0, x1, x1, x0, None)],
                       y=[v for _, _, r in g.runs
                          for v in (edges[r][0], edges[r][0], edges[r][1], edges[r][1], None)])
        else:  # a dotted line (None breaks it between runs)
            run.update(mode="lines", line={"color": style.color, "width": 2.5, "dash": "dot"},
                       x=[v for x0, x1, _ in g.runs for v in (x0, x1, None)],
                       y=[v for _, _, r in g.runs for v in (r, r, None)])
        traces.append(run)
    # The shaped marker where each run starts: the shape, not colour alone, says which
    # detector; hollow = warned.
    starts = g.starts
    traces.append({
        "type": marker_type, "name": title, "mode": "markers", "legendgroup": title,
        "x": [s[0] for s in starts],
        "y": [s[1] for s in starts],  # row numbers
        # Numbers, so sent as one base64 array: its rows decode to an array Plotly compares as
        # it does lists (see _drawn_once), and plotly.py validates it at once, not number by
        # number as it does lists (a third of the figure's build time).
        "customdata": np.asarray([s[2:] for s in starts], dtype=np.int64).reshape(-1, 6),
        "text": [_esc(rows[s[1]].name, 80) for s in starts] if names else None,
        "hovertemplate": _hover(names) + "<extra>%{fullData.name}</extra>",
        "marker": {
            "symbol": marker_symbol(detector, verdict),
            "color": style.color,
            "size": 11 if refuse else 9,
            "line": {"width": 0.8 if refuse else 1.5, "color": "#ffffff" if refuse else style.color},
        },
        "meta": _meta(engine, "start", verdict, detector), **axes,
    })
    return traces


REFUSED_RUN_PX = 5
"""The thickness of a run of refusals, in pixels (at the figure's own height)."""


# --------------------------------------------------------------------------- legends

LEGEND_ROW_PX = 22


@dataclass(frozen=True, slots=True)
class LegendEntry:
    name: str
    symbol: str
    color: str
    line: str | None = None
    """A line's dash (``solid``, ``dot``, …) to draw a short line instead of a marker."""
    fill: str | None = None
    """A filled square's colour (the hatched 'after divergence' band)."""


def legend_entries(fig: go.Figure) -> list[LegendEntry]:
    """What a figure's legend would list: one entry per named trace that shows in it."""
    out: list[LegendEntry] = []
    seen: set[str] = set()
    for t in fig.data:
        name = getattr(t, "name", None)
        if not name or name in seen or t.showlegend is False:
            continue
        if t.type == "bar":
            info = trace_info(t)
            if info is None or info.role != "divergence":
                continue
            out.append(LegendEntry(name, "square", DIVERGENCE_LINE, fill=DIVERGENCE_FILL))
        elif "markers" in (t.mode or "") and t.marker is not None and t.marker.symbol:
            out.append(LegendEntry(name, str(t.marker.symbol), str(t.marker.color or PASS_COLOR)))
        elif t.line is not None:
            out.append(LegendEntry(name, "line-ew", str(t.line.color or PASS_COLOR),
                                   line=str(t.line.dash or "solid")))
        else:
            continue
        seen.add(name)
    return out


_HIDDEN_AXIS = {"visible": False, "fixedrange": True}


def legend_figure(entries: Sequence[LegendEntry], *, columns: int | None = None) -> go.Figure:
    """The legend as a small figure of its own: the entries in columns across the page (two
    when a name is long), a marker or a line sample beside each name."""
    if columns is None:
        columns = 3 if max((len(e.name) for e in entries), default=0) <= 44 else 2
    rows = max(1, -(-len(entries) // columns))
    data: list[dict[str, Any]] = []
    for k, e in enumerate(entries):
        col, row = k % columns, k // columns
        if e.line is not None:
            data.append({"type": "scatter", "mode": "lines", "x": [col, col + 0.05],
                         "y": [row, row], "line": {"color": e.color, "dash": e.line, "width": 3},
                         "hoverinfo": "skip"})
        else:
            data.append({"type": "scatter", "mode": "markers", "x": [col + 0.025], "y": [row],
                         "marker": {"symbol": e.symbol, "size": 11, "color": e.fill or e.color,
                                    "line": {"color": e.color, "width": 1.2}},
                         "hoverinfo": "skip"})
        data.append({"type": "scatter", "mode": "text", "x": [col + 0.07], "y": [row],
                     "text": [_esc(e.name, 90)], "textposition": "middle right",
                     "textfont": {"size": 12, "color": "#1f1f1f"}, "hoverinfo": "skip"})
    hidden = _HIDDEN_AXIS
    return _figure_of_spec({"data": data, "layout": {
        "height": rows * LEGEND_ROW_PX + 12, "margin": {"l": 4, "r": 4, "t": 6, "b": 6},
        "xaxis": {**hidden, "range": [-0.02, columns]},
        "yaxis": {**hidden, "range": [rows - 0.5, -0.5]},
        "showlegend": False, "template": _PLAIN, "plot_bgcolor": "white",
        "paper_bgcolor": "white", "dragmode": False, **_drawn_once(data),
    }})


def primer_figure() -> go.Figure:
    """An empty, blank figure: what the dashboard shows (out of sight) while a corpus loads, so
    that the browser has loaded Plotly before the first real chart arrives."""
    return _figure_of_spec({"data": [], "layout": {
        "height": 10, "margin": {"l": 0, "r": 0, "t": 0, "b": 0}, "xaxis": dict(_HIDDEN_AXIS),
        "yaxis": dict(_HIDDEN_AXIS), "showlegend": False, "template": _PLAIN,
        "plot_bgcolor": "rgba(0,0,0,0)", "paper_bgcolor": "rgba(0,0,0,0)"}})


def _overview_height(n_rows: int, row_height: int) -> int:
    return max(260, min(150 + row_height * n_rows, 60000))


class _MarkerGroup:
    """One detector × verdict of one engine column, gathered row by row: its runs and one
    start per run."""

    __slots__ = ("runs", "starts")

    def __init__(self) -> None:
        self.runs: list[tuple[float, float, int]] = []
        """Per run longer than one step: the x of its first and of its last step, its row."""
        self.starts: list[list[Any]] = []
        """Per run: x, row, turn, call (-1: none), count (-1: none), run length, and the call
        and count of its last step."""


def _add_runs(groups: Mapping[tuple[str, str], _MarkerGroup], markers: Sequence[Marker],
              row: int) -> float | None:
    """Add one row's markers to ``groups`` as runs — consecutive steps with the same detector
    and verdict — and return the x of its first refusal (None: never refused).

    A loop refused once is usually refused again at every later step, so a session of 40
    refused calls becomes one run and one marker instead of 40 markers: the browser's cost
    grows with the number of SVG markers, not with the length of a line. A run is kept as its
    ends, not 40 steps: the figure the server validates and sends is that much smaller."""
    first: float | None = None
    previous: tuple[str, str, int] | None = None
    group: _MarkerGroup | None = None
    start: list[Any] = []
    for m in markers:
        x = m.x
        if first is None and m.verdict == "refuse":
            first = x
        key = (m.detector, m.verdict)
        call = -1 if m.call is None else m.call
        count = -1 if m.count is None else m.count
        if previous is None or previous != (*key, m.position - 1):
            if group is not None:
                _close_run(group, start)
            group = groups[key]
            # Shown in the hover: turns and calls counted from 1 (-1: no call).
            start = [x, row, m.turn + 1, call + 1 if call >= 0 else -1, count, 0,
                     call + 1 if call >= 0 else -1, count, x]  # (+ the last step's x)
        assert group is not None
        start[5] += 1
        start[6:8] = [call + 1 if call >= 0 else -1, count]
        start[8] = x
        previous = (*key, m.position)
    if group is not None:
        _close_run(group, start)
    return first


def _close_run(group: _MarkerGroup, start: list[Any]) -> None:
    """A run's steps share a row and follow each other along it: the line through every step
    is the one from its first step to its last (none for a run of one step: its marker)."""
    x0, row, x1 = start[0], start[1], start.pop()
    group.starts.append(start)
    if x1 != x0:
        group.runs.append((x0, x1, row))


def _hover(names: bool) -> str:
    """The hover of a run's start marker, with the session's name (``names``) or its row
    number: where the run starts and where it ends."""
    where = "%{text}<br>" if names else "row %{y}: "
    return (where + "turn %{customdata[0]}, call %{customdata[1]}, count %{customdata[2]}"
            "<br>run of %{customdata[3]} in a row, the last at call %{customdata[4]} "
            "(count %{customdata[5]})")


def _ordered_groups(groups: Mapping[tuple[str, str], Any]) -> list[tuple[str, str]]:
    order = list(detector_styles())
    return sorted(
        groups,
        key=lambda k: (order.index(k[0]) if k[0] in order else len(order), VERDICT_ORDER.index(k[1])),
    )


# --------------------------------------------------------------------------- session detail


@dataclass(frozen=True, slots=True)
class CallInfo:
    """What hovering a call shows: the tool, its input and the start of its answer."""

    tool: str
    args: str
    answer: str


PROSE_LANE = "(reply, no tools)"
LANE_MARGIN = 140
"""Left margin of the session chart, in pixels: room for a 19-character lane name."""


def session_figure(
    replay: SessionReplay,
    calls: Sequence[CallInfo],
    *,
    counters: Sequence[CounterSeries] = (),
    breaks: Sequence[float] = (),
    compactions: Sequence[float] = (),
    selected_step: int | None = None,
    title: str | None = None,
    x_end: float | None = None,
) -> go.Figure:
    """Session detail: each tool on its own lane (top), counts against thresholds (bottom).

    ``calls``: one entry per tool call of the session, by call index. ``counters``: the
    engine's counts and limits, one value per step (``engine.counters``).
    ``breaks``/``compactions``: x positions of user messages and compactions. ``x_end``: the
    end of the call axis that every guard's chart of this session shares (stacked charts then
    line up call for call).
    """
    steps = replay.steps
    xs = step_positions(steps)
    fig = make_subplots(
        rows=2,
        cols=1,
        shared_xaxes=True,
        row_heights=[0.55, 0.45],
        vertical_spacing=0.06,
    )

    # ---- lanes
    lanes: dict[str, int] = {}
    for c in calls:
        lanes.setdefault(c.tool or '""', len(lanes))
    has_prose = any(s.call is None for s in steps)
    if has_prose:
        lanes.setdefault(PROSE_LANE, len(lanes))
    step_of_call: dict[int, int] = {}
    for k, s in enumerate(steps):
        if s.call is not None:
            for pos in range(max(len(s.tools), 1)):
                step_of_call[s.call + pos] = k

    px, py, ptext = [], [], []
    for idx, c in enumerate(calls):
        owner = step_of_call.get(idx)
        call_verdict = steps[owner].verdict if owner is not None else "pass"
        px.append(idx)
        py.append(lanes[c.tool or '""'])
        ptext.append(
            f"call {idx + 1}: <b>{_esc(c.tool)}</b>({_esc(c.args)})<br>answer: {_esc(c.answer) or '—'}"
            f"<br>verdict: {call_verdict}"
        )
    fig.add_trace(
        go.Scatter(
            name="tool call",
            x=px,
            y=py,
            mode="markers",
            text=ptext,
            hovertemplate="%{text}<extra></extra>",
            marker={"symbol": "line-ns-open", "size": 12, "color": PASS_COLOR, "line": {"width": 2}},
        ),
        row=1,
        col=1,
    )
    if has_prose:
        prx = [x for s, x in zip(steps, xs, strict=True) if s.call is None]
        fig.add_trace(
            go.Scatter(
                name="reply without tools",
                x=prx,
                y=[lanes[PROSE_LANE]] * len(prx),
                mode="markers",
                hovertemplate="reply without tools<extra></extra>",
                marker={"symbol": "circle-open", "size": 8, "color": PASS_COLOR},
            ),
            row=1,
            col=1,
        )

    groups: dict[tuple[str, str], dict[str, list[Any]]] = defaultdict(
        lambda: {"x": [], "y": [], "text": []}
    )
    for s, x in zip(steps, xs, strict=True):
        if s.verdict == "pass":
            continue
        g = groups[(s.detector or "", s.verdict)]
        if s.call is None:
            g["x"].append(x)
            g["y"].append(lanes[PROSE_LANE])
            g["text"].append(f"turn {s.turn + 1}: reply repeated, count {s.count}")
            continue
        for pos, tool in enumerate(s.tools or ("",)):
            g["x"].append(s.call + pos)
            g["y"].append(lanes.get(tool or '""', 0))
            g["text"].append(f"turn {s.turn + 1}, call {s.call + pos + 1}: {_esc(tool)} — "
                             f"count {s.count}")
    for detector, verdict in _ordered_groups(groups):
        g = groups[(detector, verdict)]
        st_ = style_of(detector)
        fig.add_trace(
            go.Scatter(
                name=f"{st_.title} — {'refused' if verdict == 'refuse' else 'warned'}",
                x=g["x"],
                y=g["y"],
                mode="markers",
                text=g["text"],
                hovertemplate="%{text}<extra>%{fullData.name}</extra>",
                marker={
                    "symbol": marker_symbol(detector, verdict),
                    "color": st_.color,
                    "size": 14 if verdict == "refuse" else 12,
                    "line": {"width": 2 if verdict == "warn" else 1,
                             "color": st_.color if verdict == "warn" else "#ffffff"},
                },
                meta={"detector": detector, "verdict": verdict},
            ),
            row=1,
            col=1,
        )

    # ---- counts
    _count_traces(fig, counters, xs)

    # ---- divergence, first refusal, breaks, selection
    # The same end for both engines (a prose step sits at most half a call after the last
    # call), so stacked charts share the call axis.
    end = max(float(len(calls)), (max(xs) + 0.5) if xs else 0.5, x_end or 0.0)
    first = divergence_x(replay, xs)
    if first is not None:
        fig.add_vrect(
            x0=first + 0.5, x1=end, fillcolor=DIVERGENCE_FILL, line_width=0, layer="below",
            row="all", col=1,
        )
        # The shading is explained in the legend (a label inside a narrow band gets clipped).
        fig.add_trace(
            go.Scatter(
                name="after divergence: would not have happened", x=[None], y=[None],
                mode="markers", hoverinfo="skip",
                marker={"symbol": "square", "size": 14, "color": DIVERGENCE_FILL,
                        "line": {"color": DIVERGENCE_LINE, "width": 1}},
                meta={"role": "divergence"},
            ),
            row=1, col=1,
        )
        k = next(i for i, s in enumerate(steps) if s.verdict == "refuse")
        s = steps[k]
        lane = lanes.get((s.tools[0] if s.tools else "") or '""', 0) if s.call is not None else lanes.get(PROSE_LANE, 0)
        # Keep the label inside the plot: anchor it away from the nearer edge.
        where = (first + 1) / (end + 1) if end > -1 else 0.5
        anchor = "right" if where > 0.66 else ("left" if where < 0.34 else "center")
        fig.add_annotation(
            x=first, y=lane, xref="x", yref="y",
            text="<br>".join(textwrap.wrap(f"<b>refused</b>: {_first_refusal_text(s)}",
                                           REFUSAL_LABEL_CHARS + len("<b></b>"))),
            showarrow=True, arrowhead=2, ax=0, ay=-34, xanchor=anchor, bgcolor="#ffffff",
            bordercolor="#333", font={"size": 12, "color": "#1f1f1f"},
        )
    if breaks:
        fig.add_trace(
            go.Scatter(
                name="user message",
                x=list(breaks), y=[-0.8] * len(breaks), mode="markers",
                marker={"symbol": "triangle-up-open", "size": 10, "color": "#444"},
                hovertemplate="user message<extra></extra>",
            ),
            row=1, col=1,
        )
    if compactions:
        fig.add_trace(
            go.Scatter(
                name="compaction", x=list(compactions), y=[-0.8] * len(compactions), mode="markers",
                marker={"symbol": "bowtie-open", "size": 11, "color": "#882255"},
                hovertemplate="conversation compacted<extra></extra>",
            ),
            row=1, col=1,
        )
    if selected_step is not None and 0 <= selected_step < len(steps):
        fig.add_vline(x=xs[selected_step], line_dash="dot", line_color="#1f1f1f", line_width=1.5)

    n_lanes = max(len(lanes), 1)
    # A fixed left margin (lane names shortened to fit) keeps the call axis of two engines'
    # charts aligned when they are stacked.
    fig.update_yaxes(
        tickmode="array", tickvals=list(lanes.values()), ticktext=[_esc(t, 19) for t in lanes],
        range=[n_lanes - 0.5, -1.2], showgrid=True, gridcolor="#eeeeee", row=1, col=1,
        automargin=False, tickfont={"color": "#1f1f1f", "size": 12},
    )
    fig.update_yaxes(title={"text": "count", "standoff": 4}, rangemode="tozero",
                     gridcolor="#e6e6e6", automargin=False, row=2, col=1)
    tickvals, ticktext = call_ticks(end)
    fig.update_xaxes(gridcolor="#eeeeee", range=[-0.6, end + 0.5], tickmode="array",
                     tickvals=tickvals, ticktext=ticktext)
    fig.update_xaxes(title="tool call (from 1)", row=2, col=1)
    fig.update_layout(
        title=title,
        height=max(380, 160 + 34 * n_lanes + 200),
        margin={"l": LANE_MARGIN, "r": 10, "t": 60 if title else 30, "b": 40},
        legend={"orientation": "h", "yanchor": "top", "y": -0.12, "x": 0, "font": {"size": 12}},
        template="plotly_white",
        hovermode="closest",
        font={"color": "#1f1f1f", "size": 13},
    )
    return fig


REFUSAL_LABEL_CHARS = 24
"""The first refusal's label in a session chart breaks into lines of up to this many characters
(~150 px): a chart beside the transcript at 1000 px has ~220 px of plot, and a one-line label
("refused: tool-call loop (repeated call or cycle), count 1") ran over the tools' names."""


def _first_refusal_text(s: Step) -> str:
    count = f", count\u00a0{s.count}" if s.count is not None else ""  # (never "count" / "1")
    return f"{style_of(s.detector).title}{count}"


COUNT_COLORS = ("#D55E00", "#0072B2", "#009E73", "#CC79A7", "#E69F00", "#56B4E9")
LIMIT_COLORS = ("#1f1f1f", "#D55E00", "#000000", "#7A7A7A", "#882255")
LIMIT_DASHES = ("dash", "solid", "dot", "dashdot", "longdash")


def _count_traces(fig: go.Figure, counters: Sequence[CounterSeries], xs: Sequence[float]) -> None:
    """The count panel: counts as lines, limits as level lines (or ticks where they change
    from step to step), events as points."""
    n_count = n_limit = 0
    for series in counters:
        points = [(x, v) for x, v in zip(xs, series.values, strict=False) if v is not None]
        if not points:
            continue
        px_, py_ = [p[0] for p in points], [p[1] for p in points]
        hover = f"{_esc(series.hover or series.label)} %{{y}}<extra></extra>"
        if series.role == "count":
            color = COUNT_COLORS[n_count % len(COUNT_COLORS)]
            dash = "solid" if n_count == 0 else "dash"
            n_count += 1
            fig.add_trace(go.Scatter(
                name=series.label, x=px_, y=py_, mode="lines+markers",
                line={"color": color, "width": 2, "shape": "hv", "dash": dash},
                marker={"size": 5}, hovertemplate=hover), row=2, col=1)
        elif series.role == "limit":
            color = LIMIT_COLORS[n_limit % len(LIMIT_COLORS)]
            dash = LIMIT_DASHES[n_limit % len(LIMIT_DASHES)]
            n_limit += 1
            if len(set(py_)) == 1:
                x0, x1 = (min(xs) if xs else 0) - 0.5, (max(xs) if xs else 0) + 0.5
                fig.add_trace(go.Scatter(
                    name=series.label, x=[x0, x1], y=[py_[0], py_[0]], mode="lines",
                    line={"color": color, "width": 1.5, "dash": dash}, hovertemplate=hover),
                    row=2, col=1)
            else:
                fig.add_trace(go.Scatter(
                    name=series.label, x=px_, y=py_, mode="markers",
                    marker={"symbol": "line-ew-open", "size": 16, "color": color,
                            "line": {"width": 2.5}},
                    hovertemplate=hover), row=2, col=1)
        else:
            fig.add_trace(go.Scatter(
                name=series.label, x=px_, y=py_, mode="markers",
                marker={"symbol": "star-open", "size": 11, "color": "#009E73",
                        "line": {"width": 2}},
                hovertemplate=hover), row=2, col=1)


def _esc(text: str, limit: int = 160) -> str:
    """Escape for Plotly's HTML-ish labels and shorten."""
    t = (text or "").replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    t = t.replace("\n", " ")
    return t if len(t) <= limit else t[: limit - 1] + "…"


# --------------------------------------------------------------------------- small helpers


def summary_counts(replays: Sequence[SessionReplay]) -> dict[str, int]:
    """Sessions refused / warned and refusals per detector (first refusals only)."""
    out: dict[str, int] = {"sessions": len(replays), "refused": 0, "warned": 0}
    for r in replays:
        if r.first_refusal is not None:
            out["refused"] += 1
            key = f"first:{r.first_refusal.detector}"
            out[key] = out.get(key, 0) + 1
        if r.warned:
            out["warned"] += 1
    return out
