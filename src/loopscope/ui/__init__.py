"""The Streamlit dashboard (``streamlit run app.py``): the only code that imports streamlit,
pandas or plotly.

Modules: :mod:`.app` (the entry point: page config, sidebar, navigation), :mod:`.state`
(settings ↔ URL, the corpus, configurations and replays — start here), :mod:`.data_source`
(samples, uploads, confined folders, the corpus cache), :mod:`.settings` (the sidebar
controls), :mod:`.charts` (pure Plotly figure builders), :mod:`.page_helpers` (shared
rendering helpers), :mod:`.plain_words` (plain words and safe Markdown), :mod:`.baseline`
(what the settings change against a baseline), :mod:`.export` (export documents) and
:mod:`.pages` (one module per page; the list is :mod:`.pages.registry`).
"""
