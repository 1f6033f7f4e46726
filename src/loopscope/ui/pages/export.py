"""Export: each shown guard's configuration in its own format, the loopscope config, and the
verdicts."""

from __future__ import annotations

from typing import Any

import streamlit as st

from loopscope.engines import get_engine
from loopscope.ui import export, page_helpers, state
from loopscope.words import plural


def render() -> None:
    st.title("Export", anchor=False)
    cfgs = state.current_configs()
    engines = state.shown_engines()
    st.caption("Exports hold the *effective* values (after clamping), so the guards' own config "
               "loaders accept them. What-if values (not settable in a guard) are never "
               "exported into its config. Charts can be saved as PNG from each chart's toolbar.")

    cols = st.columns(2)
    n = 0
    for name in engines:
        engine = get_engine(name)
        for k, item in enumerate(engine.exports(cfgs[name].config)):
            with cols[n % 2]:
                st.header(item.title, anchor=False)
                st.code(item.text, language=None, wrap_lines=True)
                st.download_button(f"Download {item.file_name}", item.text,
                                   file_name=item.file_name, mime=item.mime,
                                   key=f"dl_{name}_{k}", icon=":material/download:",
                                   on_click="ignore")
                if item.caption:
                    st.caption(item.caption)
            n += 1

    st.header("loopscope config (every guard shown)", anchor=False)
    text = export.loopscope_config({name: cfgs[name].config for name in engines})
    with st.expander("Show", expanded=False):
        st.code(text, language=None, wrap_lines=True)
    st.download_button("Download loopscope-config.json", text, file_name="loopscope-config.json",
                       mime="application/json", key="dl_loopscope", icon=":material/download:",
                       on_click="ignore")
    st.markdown("Use it with the command line: `loopscope replay PATH --engine NAME --config "
                "loopscope-config.json`.")

    st.header("Verdict report", anchor=False)
    corpus = state.corpus()
    results = {name: state.replays(name) for name in engines}
    labels = {source: page_helpers.label_of(corpus, source) for source in corpus.sources}
    configs = {name: cfgs[name].config for name in engines}
    names = dict(zip(corpus.sources, corpus.session_names, strict=True))
    st.caption("Both files record the settings that produced them (each guard's, with its "
               "release) and name sessions relative to the loaded folder, or by the uploaded "
               "file's name. The CSV counts turns and calls from 1, as the dashboard does; the "
               "JSONL lines are `loopscope replay --json`'s, which count from 0.")
    c3, c4 = st.columns(2)
    c3.download_button(
        "Download verdicts.csv",
        lambda: export.verdict_report_csv(corpus.heads, results, labels, configs, names),
        file_name="loopscope-verdicts.csv", mime="text/csv", key="dl_csv",
        icon=":material/table:", on_click="ignore",
        help="One row per session and guard: first refusal, refusals, warnings and settings.",
    )
    c4.download_button(
        "Download verdicts.jsonl", lambda: export.verdict_report_jsonl(results, configs, names),
        file_name="loopscope-verdicts.jsonl", mime="application/x-ndjson", key="dl_jsonl",
        icon=":material/data_object:", on_click="ignore",
        help="The same lines as `loopscope replay --json`, every step included, guard by guard, "
        "each with the settings that produced it.",
    )

    st.header("Report to attach to a ticket", anchor=False)
    _report(corpus, engines, results, cfgs)


REPORT_LIMIT = 50


def _report(corpus: Any, engines: list[str], results: dict[str, Any],
            cfgs: dict[str, Any]) -> None:
    """A standalone HTML report of the refused sessions (at most 50)."""
    from loopscope.ui import report

    firsts = {e: state.first_refusals(results[e]) for e in engines}
    refused = [i for i in range(len(corpus.sources)) if any(firsts[e][i] for e in engines)]
    chosen = refused[:REPORT_LIMIT]
    st.caption(f"One self-contained page with why each guard refused, the timelines and the "
               f"settings used: {plural(len(chosen), 'refused session')}"
               + (f" (the first {REPORT_LIMIT:,} of {len(refused):,})" if len(refused) > REPORT_LIMIT
                  else "")
               + ". It opens in any browser, without loopscope or a network. One session's "
               "report is on its page.")

    def build() -> str:
        parts = []
        for i in chosen:
            session = corpus.sessions[i]
            parts.append(report.session_part(
                corpus, session, i, engines, {e: results[e][i] for e in engines}, cfgs,
                page_helpers.label_of(corpus, session.source),
                page_helpers.label_from_turn(corpus, session.source)))
        return report.session_report_html(parts, title="loopscope report: refused sessions",
                                          settings=report.settings_part(engines, cfgs))

    st.download_button("Download report.html", build, file_name="loopscope-report.html",
                       mime="text/html", key="dl_report", icon=":material/description:",
                       on_click="ignore", disabled=not chosen)


if __name__ == "__main__":  # run as a Streamlit page
    render()
