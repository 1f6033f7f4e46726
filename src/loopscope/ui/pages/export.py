"""Export: the current configuration for each engine, the loopscope config, and the verdicts."""

from __future__ import annotations

import streamlit as st

from loopscope.ui import export, state, views


def render() -> None:
    st.title("Export", anchor=False)
    cfgs = state.current_configs()
    gg = cfgs["gglib"].config
    oc = cfgs["openclaw"].config
    st.caption("Exports hold the *effective* values (after clamping), so the upstream config "
               "loaders accept them. Charts can be saved as PNG from each chart's toolbar.")

    c1, c2 = st.columns(2)
    with c1:
        st.header("OpenClaw (tools.loopDetection)", anchor=False)
        text = export.openclaw_json5(oc)
        st.code(text, language=None, wrap_lines=True)
        st.download_button("Download openclaw-loopDetection.json5", text,
                           file_name="openclaw-loopDetection.json5", mime="application/json5",
                           key="dl_openclaw", icon=":material/download:", on_click="ignore")
        st.caption("enabled is written explicitly: OpenClaw's own default is false; loopscope "
                   "replays with true.")
    with c2:
        st.header("gglib settings", anchor=False)
        text = export.gglib_json(gg)
        st.code(text, language=None, wrap_lines=True)
        st.download_button("Download gglib-settings.json", text, file_name="gglib-settings.json",
                           mime="application/json", key="dl_gglib", icon=":material/download:",
                           on_click="ignore")

    st.header("loopscope config (both engines)", anchor=False)
    text = export.loopscope_config(gg, oc)
    with st.expander("Show", expanded=False):
        st.code(text, language=None, wrap_lines=True)
    st.download_button("Download loopscope-config.json", text, file_name="loopscope-config.json",
                       mime="application/json", key="dl_loopscope", icon=":material/download:",
                       on_click="ignore")
    st.markdown("Use it with the command line: `loopscope replay PATH --engine gglib --config "
                "loopscope-config.json`.")

    st.header("Verdict report", anchor=False)
    corpus = state.corpus()
    results = {name: state.replays(name) for name in state.ENGINES}
    labels = {s.source: views.label_of(corpus, s.source) for s in corpus.sessions}
    c3, c4 = st.columns(2)
    c3.download_button(
        "Download verdicts.csv", export.verdict_report_csv(corpus.sessions, results, labels),
        file_name="loopscope-verdicts.csv", mime="text/csv", key="dl_csv",
        icon=":material/table:", on_click="ignore",
        help="One row per session and engine: first refusal, refusals and warnings.",
    )
    c4.download_button(
        "Download verdicts.jsonl", export.verdict_report_jsonl(results),
        file_name="loopscope-verdicts.jsonl", mime="application/x-ndjson", key="dl_jsonl",
        icon=":material/data_object:", on_click="ignore",
        help="The same lines as `loopscope replay --json`, every step included, gglib then OpenClaw.",
    )


if __name__ == "__main__":  # run as a Streamlit page
    render()
