"""Export: each shown guard's configuration in its own format, the loopscope config, and the
verdicts."""

from __future__ import annotations

import streamlit as st

from loopscope.engines import get_engine
from loopscope.ui import export, state, views


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
    labels = {s.source: views.label_of(corpus, s.source) for s in corpus.sessions}
    c3, c4 = st.columns(2)
    c3.download_button(
        "Download verdicts.csv", export.verdict_report_csv(corpus.sessions, results, labels),
        file_name="loopscope-verdicts.csv", mime="text/csv", key="dl_csv",
        icon=":material/table:", on_click="ignore",
        help="One row per session and guard: first refusal, refusals and warnings.",
    )
    c4.download_button(
        "Download verdicts.jsonl", export.verdict_report_jsonl(results),
        file_name="loopscope-verdicts.jsonl", mime="application/x-ndjson", key="dl_jsonl",
        icon=":material/data_object:", on_click="ignore",
        help="The same lines as `loopscope replay --json`, every step included, guard by guard.",
    )


if __name__ == "__main__":  # run as a Streamlit page
    render()
