"""loopscope: see what an agent's tool-call loop guard would do to recorded sessions.

The core (``model``, ``formats``, ``engines``, ``experiments``, ``explain``, ``cli``) has no
UI imports; the Streamlit dashboard lives in ``loopscope.ui``.
"""

__version__ = "0.1.0"
