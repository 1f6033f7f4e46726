"""Regenerate the parts of README.md that are made from code: the settings tables.

    python docs/update_readme.py

(``tests/test_readme.py`` fails when they are out of date.)
"""

from __future__ import annotations

import re
from pathlib import Path

from loopscope.cli.engines import settings_markdown

README = Path(__file__).resolve().parents[1] / "README.md"


def main() -> None:
    text = README.read_text(encoding="utf-8")
    new = re.sub(r"<!-- settings:begin -->\n.*?<!-- settings:end -->",
                 lambda _: f"<!-- settings:begin -->\n{settings_markdown()}<!-- settings:end -->",
                 text, flags=re.S)
    README.write_text(new, encoding="utf-8")


if __name__ == "__main__":
    main()
