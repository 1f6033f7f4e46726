"""Sweep: two settings over ranges → heatmaps of the labels-based metrics.

The top of the page scores the current settings against the labels and lets you label
sessions; below, pick two settings and their ranges, run the sweep (with progress), and click a
cell of any heatmap to make that configuration the current one.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import Any

import plotly.graph_objects as go
import streamlit as st

from loopscope.experiments.sweep import (
    Axis,
    GridError,
    SweepResult,
    build_cells,
    check_axes,
    sweep_prepared,
)
from loopscope.ui import labelling, layout, metrics_panel, page_helpers, state
from loopscope.ui.plain_words import md
from loopscope.ui.progress import bar_progress
from loopscope.words import plural

ENGINE_KEY = "sweep.engine"
RESULT_KEY = "_sweep_result"
RUN_PARAM = "sweep"
# The largest grid this page runs; the CLI (worker processes or Dask) takes larger ones.
# (Page files run as scripts: a bare string here would be drawn on the page.)
MAX_UI_CELLS = 400

HEATMAPS: tuple[tuple[str, str, bool], ...] = (
    # (metric, title, lower is better)
    ("false_refusals", "Good sessions refused", True),
    ("loops_missed", "Loops missed", True),
    ("wasted_turns", "Turns wasted before a catch", True),
    ("refused_early", "Loops refused too early", True),
    ("precision", "Precision", False),
    ("recall", "Recall", False),
)


def _refusal_columns() -> tuple[dict[str, list[Any]], dict[str, Any]]:
    """The label editor's context beside the loop start a person types: the earliest turn at
    which a shown guard refuses, and which guards refuse. Two columns whatever the number of
    guards: a column per guard made the editor wider than the page at 1000 px, hiding guards
    behind a sideways scroll; each guard's verdict and why is on the session page."""
    shown = state.shown_engines()
    titles = state.engine_titles()
    firsts = [state.first_refusals(state.replays(name)) for name in shown]
    earliest: list[str] = []
    refusing: list[str] = []
    for per_guard in zip(*firsts, strict=True):
        turns = [first.turn for first in per_guard if first is not None]
        earliest.append(f"turn {min(turns) + 1}" if turns else "")
        refusing.append(f"{len(turns)} of {len(shown)}" if turns else "none")
    columns = {"first refusal": earliest, "guards refusing": refusing}
    config = {
        "first refusal": st.column_config.TextColumn(
            "First refusal", width=95,
            help="The earliest turn (from 1) at which a guard shown refuses this session under "
                 "the current settings. Open the session for each guard's verdict."),
        "guards refusing": st.column_config.TextColumn(
            "Refused by", width=80,
            help="How many of the guards shown refuse this session: "
                 + ", ".join(titles[name] for name in shown) + "."),
    }
    return columns, config


def sweepable(engine: str) -> list[state.Field]:
    """The settings a sweep can vary: the engine's whole-number settings."""
    return [f for f in state.fields_of(engine) if f.kind in ("int", "int_or_off")]


def default_range(f: state.Field) -> tuple[int, int, int]:
    """A first range around the default: about half to twice it, at most 8 values."""
    default = f.default if isinstance(f.default, int) else 10
    lo = max(f.min, default // 2 if default > 2 else 1)
    hi = min(f.max, max(default * 2, lo + 4))
    step = max(1, math.ceil((hi - lo + 1) / 8))
    return lo, hi, step


def _url_or_state(key: str) -> Any:
    """A bound control's value before it is drawn (the URL's, on a shared link)."""
    return st.session_state.get(key, st.query_params.get(key))


def _axis_inputs(engine: str, which: str, fields: list[state.Field], exclude: str | None) -> Axis:
    """One axis: the setting and its range, bound to the URL so a link reproduces the sweep."""
    options = [f for f in fields if f.native != exclude]
    names = [f.native for f in options]
    key = f"sweep.{engine}.{which}.key"
    if _url_or_state(key) not in names:
        st.session_state[key] = names[0]  # the x list leaves out the y setting
    by_name = {f.native: f for f in options}
    native = st.selectbox(
        "Rows (y)" if which == "y" else "Columns (x)",
        names,
        format_func=lambda n: by_name[n].label,
        key=key, bind="query-params",
        help="The setting swept along this axis (its name in the guard's config is in the "
        "sidebar's help).",
    )
    f = by_name[native]
    lo_d, hi_d, step_d = default_range(f)
    c = st.columns(3)
    lo = c[0].number_input("From", f.lowest, f.highest, lo_d, 1,
                           key=f"sweep.{engine}.{native}.lo", bind="query-params")
    hi = c[1].number_input("To", f.lowest, f.highest, hi_d, 1,
                           key=f"sweep.{engine}.{native}.hi", bind="query-params")
    step = c[2].number_input("Step", 1, f.highest, step_d, 1,
                             key=f"sweep.{engine}.{native}.step", bind="query-params")
    if lo > hi:
        lo, hi = hi, lo
    return Axis(native, tuple(range(int(lo), int(hi) + 1, int(step))))


def run_grid(engine: str, axes: list[Axis], progress: Any = None) -> SweepResult:
    """The sweep over the loaded corpus: prepared sessions, base = the sidebar's settings."""
    corpus = state.corpus()
    version = state.current_version(engine)
    cells = build_cells(engine, axes, version=version,
                        base_values=state.setting_values(engine, version=version))
    return sweep_prepared(
        engine,
        state.prepared(engine, cells[0].config if cells else None),
        corpus.turn_counts,
        cells,
        labelling.current_labels(corpus),
        sources=corpus.sources,
        axes=axes,
        progress=progress,
    )


def cell_settings(result: SweepResult, values: Mapping[str, Any]) -> dict[str, Any]:
    """The widget values that make a cell the current configuration."""
    return {f"{result.engine}.{k}": int(v) for k, v in values.items()}


def _point_values(result: SweepResult, point: Mapping[str, Any]) -> dict[str, int] | None:
    """The cell a clicked heatmap point stands for (its ``customdata`` carries the values)."""
    data = point.get("customdata")
    if isinstance(data, list | tuple) and len(data) >= len(result.axes):
        try:
            return {a.key: int(v) for a, v in zip(result.axes, data, strict=False)}
        except (TypeError, ValueError):
            return None
    x, y = point.get("x"), point.get("y")
    if len(result.axes) == 2 and x is not None and y is not None:
        try:
            return {result.axes[0].key: int(y), result.axes[1].key: int(x)}
        except (TypeError, ValueError):
            return None
    return None


def apply_cell(values: Mapping[str, Any]) -> None:
    """Make a sweep cell the current configuration (a widget callback)."""
    result: SweepResult | None = st.session_state.get(RESULT_KEY)
    if result is None:
        return
    state.apply_settings(cell_settings(result, values))
    st.session_state["_sweep_applied"] = dict(values)


def _on_heatmap_select(chart_key: str) -> None:
    result: SweepResult | None = st.session_state.get(RESULT_KEY)
    event = st.session_state.get(chart_key)
    selection = getattr(event, "selection", None)
    if selection is None and isinstance(event, Mapping):
        selection = event.get("selection")
    points = getattr(selection, "points", None)
    if points is None and isinstance(selection, Mapping):
        points = selection.get("points")
    if result is None or not points:
        return
    values = _point_values(result, points[0])
    if values is not None:
        apply_cell(values)


def _axis_labels(result: SweepResult) -> dict[str, str]:
    """Setting name → the sidebar's label, for the swept settings."""
    fields = {f.native: f.label for f in state.fields_of(result.engine)}
    return {a.key: fields.get(a.key, a.key) for a in result.axes}


def _wrap(text: str, width: int = 28) -> str:
    """A long axis title on two lines (Plotly breaks lines at <br>)."""
    if len(text) <= width:
        return text
    cut = text.rfind(" ", 0, width)
    return text if cut <= 0 else text[:cut] + "<br>" + text[cut + 1:]


def heatmap(result: SweepResult, metric: str, title: str, lower_better: bool,
            current: Mapping[str, Any] | None = None) -> go.Figure:
    """One metric over the grid, drawn as clickable tiles (rows: first axis; columns: second).

    The colour is a ``go.Heatmap`` (its tiles fill the plot at any width); the values and the
    clicks are a scatter trace on top (``fig.data[0]``), whose markers are transparent,
    because Streamlit reports clicks (selections) on scatter points.
    """
    ya, xa = result.axes[0], result.axes[1]
    xs, ys, zs, texts, custom = [], [], [], [], []
    for cell in result:
        v = getattr(cell.metrics, metric)
        xs.append(str(cell.values[xa.key]))
        ys.append(str(cell.values[ya.key]))
        zs.append(float("nan") if v is None else float(v))
        shown = "–" if v is None else (f"{v:.0%}" if isinstance(v, float) else str(v))
        texts.append(shown + ("*" if cell.warnings else ""))
        custom.append([cell.values[ya.key], cell.values[xa.key]])
    n = max(len(xa.values), len(ya.values))
    colorscale = "Blues" if lower_better else "Greens"
    finite = [z for z in zs if z == z]
    lo, hi = (min(finite), max(finite)) if finite else (0.0, 1.0)
    # Light text on the dark end of the scale, dark text elsewhere, so every value is legible.
    text_colors = [
        "#ffffff" if z == z and hi > lo and (z - lo) / (hi - lo) > 0.55 else "#1f1f1f"
        for z in zs
    ]
    fig = go.Figure(
        go.Scatter(
            x=xs, y=ys, mode="markers+text", text=texts, textposition="middle center",
            textfont={"size": 11 if n <= 6 else (9 if n <= 12 else 7), "color": text_colors},
            customdata=custom,
            # (the click targets, clear over the heatmap: small, so that a click anywhere picks
            # the nearest tile's centre — hoverdistance -1 below — not an overlapping marker)
            marker={"symbol": "square", "size": 4, "color": "rgba(0,0,0,0)",
                    "line": {"width": 0}},
            hovertemplate=(
                f"{_axis_labels(result)[ya.key]} = %{{y}}<br>{_axis_labels(result)[xa.key]} = "
                f"%{{x}}<br>{title}: %{{text}}<extra>click to apply</extra>"
            ),
            selected={"marker": {"opacity": 1}},
            unselected={"marker": {"opacity": 1}},
        )
    )
    fig.add_trace(go.Heatmap(
        x=xs, y=ys, z=zs, colorscale=colorscale, zmin=lo, zmax=hi if hi > lo else lo + 1,
        xgap=1, ygap=1, showscale=True, colorbar={"thickness": 10, "len": 0.8},
        hoverinfo="skip",
    ))
    if current is not None and current.get(xa.key) in xa.values and current.get(ya.key) in ya.values:
        # The current cell's outline, in the axes' category positions (it fits the tile at any
        # width).
        col = list(xa.values).index(current[xa.key])
        row = list(ya.values).index(current[ya.key])
        fig.add_shape(type="rect", xref="x", yref="y", x0=col - 0.5, x1=col + 0.5,
                      y0=row - 0.5, y1=row + 0.5, line={"color": "#d62728", "width": 3},
                      name="current")
    labels = _axis_labels(result)
    # The axis titles get room of their own (automargin) so they never cover the tick labels.
    # The title on two lines (the metric, then which way is better): one line was cut at a
    # heatmap's narrowest.
    fig.update_layout(
        title={"text": f"{title}<br><span style='font-size:12px'>"
                       f"{'lower' if lower_better else 'higher'} is better</span>",
               "font": {"size": 14}, "y": 0.95, "yanchor": "top"},
        height=420, margin={"l": 20, "r": 10, "t": 62, "b": 20},
        xaxis={"title": {"text": _wrap(labels[xa.key]), "standoff": 14}, "type": "category",
               "categoryorder": "array", "categoryarray": [str(v) for v in xa.values],
               "automargin": True},
        yaxis={"title": {"text": _wrap(labels[ya.key]), "standoff": 14}, "type": "category",
               "categoryorder": "array", "categoryarray": [str(v) for v in ya.values],
               "automargin": True},
        clickmode="event+select", dragmode=False, showlegend=False, hoverdistance=-1,
        plot_bgcolor="rgba(0,0,0,0)",
    )
    return fig


def render() -> None:
    corpus = page_helpers.page_corpus("Labels, metrics and sweeps")
    if corpus is None:
        return

    st.subheader("How the current settings score", anchor=False)
    metrics_panel.render(key="sweep.metrics")
    with st.expander("Label sessions", expanded=not labelling.current_labels(corpus)):
        labelling.label_table(*_refusal_columns(), key="sweep.labels", corpus=corpus)
        labelling.label_transfer(corpus)
        for p in labelling.label_problems(corpus)[:10]:
            st.warning(md(p.text(), 400))

    st.subheader("Sweep two settings", anchor=False)
    engines = [e for e in state.shown_engines() if sweepable(e)]
    if not engines:
        st.info("None of the guards shown has a numeric setting to sweep.")
        return
    engine = page_helpers.guard_choice(engines, ENGINE_KEY)
    fields = sweepable(engine)
    c1, c2 = st.columns(2)
    with c1:
        y_axis = _axis_inputs(engine, "y", fields, None)
    with c2:
        x_axis = _axis_inputs(engine, "x", fields, y_axis.key)
    axes = [y_axis, x_axis]
    size = len(y_axis.values) * len(x_axis.values)
    st.caption(
        f"{size} configurations × {len(corpus.sessions):,} sessions. Every other setting is the "
        "sidebar's."
    )
    too_big = size > MAX_UI_CELLS
    if too_big:
        st.warning(
            f"{size} cells is more than this page runs ({MAX_UI_CELLS}); raise a step, or use "
            "`loopscope sweep` (worker processes or a Dask cluster)."
        )
    # A shared link (?sweep=run) runs the same sweep again when the page opens.
    ran = st.session_state.get(RESULT_KEY)
    from_link = (st.query_params.get(RUN_PARAM) == "run" and not too_big and (
        ran is None or ran.engine != engine or list(ran.axes) != axes))
    clicked = st.button("Run sweep", type="primary", icon=":material/grid_on:",
                        disabled=too_big, key="sweep.run")
    if clicked or from_link:
        try:
            check_axes(axes)
        except GridError as exc:
            st.error(md(str(exc)))
        else:
            bar = st.progress(0.0, text="Sweeping…")
            show = bar_progress(bar)
            done = [0]

            def tick(n: int) -> None:
                done[0] += n
                show(done[0] / size, f"Sweeping… {done[0]}/{size} configurations")

            st.session_state[RESULT_KEY] = run_grid(engine, axes, tick)
            st.session_state["_sweep_labels"] = labelling.labels_version(
                labelling.current_labels(corpus))
            st.query_params[RUN_PARAM] = "run"
            bar.empty()
    if st.session_state.get(RESULT_KEY) is not None:
        st.caption("The URL holds this sweep (the guard, both settings, their ranges): opening "
                   "the link runs it again.")
    _results()


def _results() -> None:
    result: SweepResult | None = st.session_state.get(RESULT_KEY)
    if result is None:
        st.info("Pick two settings and their ranges, then run the sweep.")
        return
    corpus = state.corpus()
    if st.session_state.get("_sweep_labels") != labelling.labels_version(
            labelling.current_labels(corpus)):
        st.warning("The labels changed since this sweep ran; run it again to update the heatmaps.")
    applied = st.session_state.get("_sweep_applied")
    if applied:
        names = _axis_labels(result)
        st.success("Applied " + ", ".join(f"“{md(names.get(k, k))}” = {v}"
                                          for k, v in applied.items())
                   + ". Every page now uses it.")
    current = {
        f.native: state.widget_value(f) for f in state.fields_of(result.engine)
    }
    best = result.best()
    st.caption(
        f"{state.engine_titles()[result.engine]}: {len(result)} configurations. Click a tile to "
        "make it the current configuration; the red outline marks the current one. "
        "* = the engine adjusted that configuration (a clamp or a raised threshold)."
    )
    # Heatmaps in a row that wraps: three to a row at 1400 px, one at 1000 px, never so narrow
    # that a title is cut or the tiles' numbers run together.
    with layout.panels("sweep_heatmaps", layout.NARROW_PANEL_MIN_PX):
        for metric, title, lower_better in HEATMAPS:
            key = f"sweep.heatmap.{metric}"
            st.plotly_chart(
                heatmap(result, metric, title, lower_better, current),
                key=key, on_select=functools.partial(_on_heatmap_select, key),
                selection_mode="points", theme=None, config={"displaylogo": False},
            )
    options = list(range(len(result)))

    def describe(i: int) -> str:
        cell = result.cells[i]
        m = cell.metrics
        names = _axis_labels(result)
        return (", ".join(f"{names[k]} = {v}" for k, v in cell.values.items())
                + f" — {m.false_refusals} false, {m.loops_missed} missed, "
                f"{m.wasted_turns} wasted" + (" (adjusted)" if cell.warnings else ""))

    b1, b2 = st.columns([3, 1])
    with b1:
        picked = st.selectbox("Or pick a configuration", options, format_func=describe,
                              index=result.cells.index(best) if best else 0, key="sweep.pick")
    with b2:
        st.button("Apply", key="sweep.apply", on_click=apply_cell,
                  args=(dict(result.cells[picked].values),), icon=":material/check:")
    if best is not None:
        labelled = labelling.current_labels(corpus)
        names = _axis_labels(result)
        where = ", ".join(f"“{names[k]}” = {v}" for k, v in best.values.items())
        m = best.metrics
        wrong = m.false_refusals + m.refused_early + m.loops_missed
        if labelled:
            st.markdown(
                f"**Best by the labels:** {md(where)} — the fewest wrong outcomes on labelled "
                f"sessions ({wrong}: {plural(m.false_refusals, 'good session')} refused, "
                f"{plural(m.loops_missed, 'loop')} missed, {m.refused_early} refused before the "
                "loop "
                f"began), then the fewest turns wasted before a catch ({m.wasted_turns}).")
        st.button("Apply the best by the labels", key="sweep.apply_best", on_click=apply_cell,
                  args=(dict(best.values),), disabled=not labelled,
                  help="Fewest wrong outcomes on labelled sessions (false refusals, loops missed "
                  "or refused too early), then fewest wasted turns."
                  if labelled else "Label sessions first: without labels there is no best.")


if __name__ == "__main__":  # run as a Streamlit page
    render()

