"""Explanations every OpenClaw release gives alike.

Some limits of a replay do not depend on the release: recognising a missing tool by its error's
wording, channel tools whose sends carry fresh ids without their plugin, and the guard armed on
every compaction. Their wording and the patterns that find them live here once, so that both
releases say the same thing the same way.
"""

from __future__ import annotations

import re
from typing import Final

SHARED_LIMITATIONS: Final[dict[str, str]] = {
    "unknown_tool_wording": "Unknown-tool detection depends on the error's wording: some "
    "missing-tool errors here are not recognised.",
    "channel_sends": "Sends through channel tools (telegram, slack, …) are not recognised as "
    "sends without their plugin, so fresh message ids make every result look new.",
    "guard_arms_on_every_compaction": "Replay approximation: every compaction arms the "
    "post-compaction guard; OpenClaw arms it only after a compaction retry.",
}
"""Limitation key → text, for the limits every release's replay has (in display order)."""

CHANNEL_TOOLS: Final = frozenset({"telegram", "slack", "discord", "whatsapp", "signal",
                                  "imessage", "feishu", "line", "matrix", "msteams",
                                  "googlechat", "mattermost", "zalo"})
"""Channel tools: message sends upstream recognises only with the channel's plugin loaded."""

MISSING_TOOL: Final = re.compile(r"tool.*(not found|not available|unavailable|no such|unknown)|"
                                 r"(no such|unknown|unavailable).*tool", re.IGNORECASE)
"""Error wording that says a tool is missing (whether or not upstream recognises it)."""
