"""The Streamlit dashboard (``streamlit run app.py``): the only code that imports streamlit,
pandas or plotly.

Modules: :mod:`.app` (the entry point: page config, sidebar, navigation), :mod:`.state`
(settings ↔ URL, the corpus, configurations and replays — start here), :mod:`.data` (samples,
uploads, confined folders, the corpus cache), :mod:`.settings` (the sidebar controls),
:mod:`.charts` (pure Plotly figure builders), :mod:`.views` (shared rendering helpers),
:mod:`.export` (export documents) and :mod:`.pages` (one module per page).
"""
