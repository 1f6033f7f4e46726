"""loopscope's dashboard: ``streamlit run app.py`` (opens on ``sample_transcripts/``)."""

from loopscope.ui.app import main

main()
