"""A standalone HTML report of one session or a set of sessions, to attach to a ticket.

One self-contained page: for each session the verdict of every guard in plain words, what the
session's label makes of it, what the guard would have done, the facts and known limitations,
and its timeline as a static Plotly figure; then the settings used. It opens in any browser
without loopscope and without a network: plotly.js is inlined, and a Content-Security-Policy
forbids every fetch. Every string from a recording (names, tools, errors) is HTML-escaped;
Plotly's own JSON escapes ``<``, ``>`` and ``/`` inside its script.

Pure: no Streamlit. The session page and the overview build their downloads with it.
"""

from __future__ import annotations

import datetime as _dt
import html
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from loopscope.advice import AdviceWords, SessionAdvice, advice_words, session_advice
from loopscope.engines import Engine, SessionReplay, Step, get_engine
from loopscope.engines.contract import default_consequence
from loopscope.model import Session
from loopscope.wording import code_spans
from loopscope.words import plural

__all__ = [
    "EngineSection",
    "SessionPart",
    "SettingsPart",
    "corpus_advice",
    "file_name",
    "session_part",
    "session_report_html",
    "settings_part",
]

CSP = ("default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; "
       "style-src 'unsafe-inline'; img-src data:; font-src data:")
"""Nothing may be fetched: the page holds everything it shows."""


@dataclass(frozen=True, slots=True)
class EngineSection:
    title: str
    verdict: str
    headline: str = ""
    meaning: str = ""
    action: str = ""
    facts: tuple[str, ...] = ()
    limitations: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    figure: Any = None
    legend: Any = None
    """The figure's legend, drawn apart in two columns (as the session page does)."""
    consequence: str = ""
    """For a refusal: whether it stops the agent (next to the verdict, as on the page)."""
    advice: AdviceWords | None = None
    """The advice the session's label asks for, in the words of the page and the CLI."""


@dataclass(frozen=True, slots=True)
class SessionPart:
    name: str
    facts: str
    engines: tuple[EngineSection, ...] = ()


@dataclass(frozen=True, slots=True)
class SettingsPart:
    """Per guard: its title (and version) and ``(label, value, name in the guard's config)``."""

    guards: tuple[tuple[str, tuple[tuple[str, str, str], ...]], ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)


def _first_step(replay: SessionReplay) -> Step | None:
    if replay.first_refusal is None:
        return None
    return next((s for s in replay.steps if s.verdict == "refuse"), None)


def corpus_advice(corpus: Any, name: str, index: int, config: Any, label: str | None,
                  from_turn: int | None) -> SessionAdvice:
    """:func:`loopscope.advice.session_advice` for the session at ``index`` of ``corpus``,
    weighed on every loaded session (what the session page shows, made without Streamlit)."""
    engine = get_engine(name)
    prepared = corpus.prepared(engine, engine.version_of(config))
    runs: dict[str, list[Any]] = {}

    def first_refusals(other: Any) -> list[Any]:
        key = repr(other)
        if key not in runs:
            runs[key] = list(corpus.run_many(engine, other).first_refusals())
        return runs[key]

    return session_advice(engine, prepared[index], config, label=label, from_turn=from_turn,
                          index=index, before=first_refusals(config),
                          first_refusals=first_refusals, labels=corpus.label_values())


def _guard(name: str, configs: Mapping[str, Any]) -> tuple[Engine[Any, Any], Any, str, str]:
    """``(engine, config, version, title)`` of the guard ``name`` in ``configs``.

    ``configs`` maps a guard to its resolution (the config is its ``config``) or to a bare
    config. The title names the release only where the guard has more than one, as the
    dashboard does."""
    engine = get_engine(name)
    res = configs[name]
    config = getattr(res, "config", res)
    version = engine.version_of(config)
    title = engine.title + (f" {version}" if len(engine.versions) > 1 else "")
    return engine, config, version, title


def session_part(corpus: Any, session: Session, index: int, engines: Sequence[str],
                 replays: Mapping[str, SessionReplay], configs: Mapping[str, Any],
                 label: str | None, from_turn: int | None,
                 advice: Mapping[str, SessionAdvice] | None = None) -> SessionPart:
    """Everything the report says about one session (``configs``: engine → resolution;
    ``advice``: engine → the session's advice as the page has it, else made here)."""
    from loopscope.ui import charts, page_helpers
    from loopscope.ui.plain_words import label_meaning, plain, plain_explanation, where

    sections = []
    infos = page_helpers.call_infos(session)
    breaks, compactions = page_helpers.event_positions(session)
    end = float(len(session.calls))
    for r in replays.values():
        xs = charts.step_positions(r.steps)
        if xs:
            end = max(end, max(xs) + 0.5)
    for name in engines:
        engine, config, version, title = _guard(name, configs)
        specs = engine.settings_for(version)
        replay = replays[name]
        first = _first_step(replay)
        headline = action = consequence = ""
        facts: tuple[str, ...] = ()
        if first is not None:
            e = plain_explanation(engine.explainer.explain_step(first, replay, config), specs)
            verdict = f"{engine.title} would have refused this session at {where(replay.first_refusal)}."
            headline, action = e.headline, e.action or ""
            consequence = e.consequence or default_consequence(engine.title)
            facts = (*e.facts, *([e.limit] if e.limit else []))
        elif replay.warning_count:
            warns = replay.warning_count
            verdict = (f"{engine.title} would never have refused this session; it would have "
                       f"warned {'once' if warns == 1 else f'{warns:,} times'}.")
        else:
            verdict = f"{engine.title} would never have refused or warned about this session."
        warnings = getattr(configs[name], "warnings", ())
        lims = tuple(plain(lim.text, specs, [lim.id]) for lim in
                     engine.explainer.limitations(session, replay, config, warnings))
        prepared = engine.prepare(session, version)
        fig = charts.session_figure(
            replay, infos, counters=engine.counters(prepared, replay, config), breaks=breaks,
            compactions=compactions, title=title, x_end=end)
        legend = charts.legend_figure(charts.legend_entries(fig), columns=2)
        fig.update_layout(showlegend=False)
        given = (advice or {}).get(name)
        if given is None:
            given = corpus_advice(corpus, name, index, config, label, from_turn)
        sections.append(EngineSection(
            title, verdict, headline,
            label_meaning(label, first.turn if first is not None else None, from_turn,
                          engine.title),
            action, facts, lims, tuple(engine.notes), fig, legend, consequence,
            advice_words(given, specs)))
    facts_text = (f"{plural(len(session.calls), 'tool call')} · "
                  f"{plural(len(session.turns), 'assistant turn')} · "
                  f"format `{session.format}`")
    if label in ("loop", "ok"):
        facts_text += " · labelled " + ("a real loop" if label == "loop" else "good work")
    return SessionPart(corpus.display(session.source), facts_text, tuple(sections))


def settings_part(engines: Sequence[str], configs: Mapping[str, Any]) -> SettingsPart:
    guards = []
    for name in engines:
        engine, config, version, title = _guard(name, configs)
        values = engine.values(config)
        rows = []
        for spec in engine.settings_for(version):
            if spec.name in values:
                value = values[spec.name]
                text = (", ".join(value) if spec.kind == "str_list" else spec.format(value))
                if value == spec.default:
                    text += " (default)"
                if not spec.deployable:
                    text += " (what-if)"
                rows.append((spec.label, text, spec.name))
        guards.append((title, tuple(rows)))
    return SettingsPart(tuple(guards))


def file_name(display: str) -> str:
    """A safe download name for a report about ``display``."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", display).strip("-.")[:80] or "session"
    return f"loopscope-report-{stem}.html"


# --------------------------------------------------------------------------- HTML

_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; color: #1f1f1f;
       max-width: 1100px; margin: 2rem auto; padding: 0 1rem; line-height: 1.45; }
h1 { font-size: 1.6rem; } h2 { font-size: 1.3rem; margin-top: 2.2rem;
     border-bottom: 1px solid #ddd; padding-bottom: .3rem; word-break: break-all; }
h3 { font-size: 1.1rem; margin-bottom: .3rem; }
.verdict { font-weight: 600; } .refused { color: #a61b1b; } .passed { color: #1b6b3a; }
.muted { color: #666; font-size: .9rem; } .guard { border: 1px solid #ddd; border-radius: 8px;
         padding: .6rem 1rem; margin: .8rem 0; }
table { border-collapse: collapse; margin: .5rem 0 1rem; } td, th { border: 1px solid #ddd;
        padding: .25rem .6rem; text-align: left; font-size: .92rem; }
code { background: #f3f3f3; padding: 0 .2rem; }
.consequence { font-weight: 600; } .mark { color: #8a4b00; font-size: .9rem; }
"""


def _e(text: str) -> str:
    return html.escape(str(text), quote=True)


def _h(text: str) -> str:
    """A sentence as HTML: escaped, its backticked names as ``<code>`` (never raw
    backticks)."""
    return "".join(f"<code>{_e(piece)}</code>" if code else _e(piece)
                   for code, piece in code_spans(str(text)))


def _advice_html(words: AdviceWords) -> list[str]:
    """The advice in the words of the page and the CLI (the change's ``--set`` as code)."""
    out = [f'<p class="advice"><strong>{_h(words.heading)}</strong> {_h(words.summary)}</p>']
    if words.changes:
        items = []
        for c in words.changes:
            marks = "".join(f' <span class="mark">[{_e(m)}]</span>' for m in c.marks)
            items.append(f"<li><strong>{_e(c.change)}</strong> (<code>{_e(c.typed)}</code>)"
                         f"{marks}: {_e(c.effect)}.</li>")
        out.append("<ul>" + "".join(items) + "</ul>")
    return out


def _figure_html(fig: Any) -> str:
    import plotly.io as pio

    return str(pio.to_html(fig, include_plotlyjs=False, full_html=False,
                           config={"staticPlot": True, "displaylogo": False},
                           default_height=f"{int(fig.layout.height or 480)}px"))


def session_report_html(parts: Sequence[SessionPart], *, title: str,
                        settings: SettingsPart | None = None,
                        generated: _dt.datetime | None = None) -> str:
    """The whole page."""
    from importlib.metadata import PackageNotFoundError, version

    from plotly.offline import get_plotlyjs

    try:
        made_with = f"loopscope {version('loopscope')}"
    except PackageNotFoundError:
        made_with = "loopscope"
    when = (generated or _dt.datetime.now(_dt.UTC)).strftime("%Y-%m-%d %H:%M UTC")
    out = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(title)}</title><style>{_STYLE}</style>",
        f"<script>{get_plotlyjs()}</script>", "</head><body>",
        f"<h1>{_e(title)}</h1>",
        f'<p class="muted">Made with {_e(made_with)} on {_e(when)}. loopscope replays recorded '
        "agent sessions through exact ports of the loop guards and says where each would have "
        "stopped the agent. Turns and calls are counted from 1. Everything after a guard's "
        "first refusal (shaded on the timelines) would not have happened as recorded.</p>",
    ]
    for part in parts:
        out.append(f"<section><h2>{_e(part.name)}</h2>")
        out.append(f'<p class="muted">{_h(part.facts)}</p>')
        for g in part.engines:
            cls = "refused" if "would have refused" in g.verdict else "passed"
            out.append(f'<div class="guard"><h3>{_e(g.title)}</h3>')
            out.append(f'<p class="verdict {cls}">{_e(g.verdict)}</p>')
            if g.consequence:
                out.append(f'<p class="consequence">{_h(g.consequence)}</p>')
            if g.headline:
                out.append(f"<p>{_h(g.headline)}</p>")
            if g.meaning:
                out.append(f"<p>{_h(g.meaning)}</p>")
            if g.advice is not None:
                out.extend(_advice_html(g.advice))
            if g.action:
                out.append(f"<p><strong>What {_e(g.title)} would have done:</strong> "
                           f"{_h(g.action)}</p>")
            if g.facts:
                out.append("<ul>" + "".join(f"<li>{_h(f)}</li>" for f in g.facts) + "</ul>")
            if g.limitations:
                out.append("<p><strong>Known limitations that apply here</strong></p><ul>"
                           + "".join(f"<li>{_h(t)}</li>" for t in g.limitations) + "</ul>")
            for note in g.notes:
                out.append(f'<p class="muted">{_e(note)}</p>')
            if g.figure is not None:
                out.append(_figure_html(g.figure))
            if g.legend is not None:
                out.append(_figure_html(g.legend))
            out.append("</div>")
        out.append("</section>")
    if settings is not None:
        out.append("<section><h2>Settings used</h2>")
        for guard, rows in settings.guards:
            out.append(f"<h3>{_e(guard)}</h3><table><tr><th>setting</th><th>value</th>"
                       "<th>name in the guard's config</th></tr>")
            out.extend(f"<tr><td>{_e(label)}</td><td>{_e(value)}</td><td><code>{_e(name)}"
                       "</code></td></tr>" for label, value, name in rows)
            out.append("</table>")
        out.append("</section>")
    out.append("</body></html>")
    return "\n".join(out)
