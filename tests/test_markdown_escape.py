"""``escape_markdown`` / ``markdown_code`` (issue #18): strings from recordings rendered as
Markdown show as themselves and make no link, image, HTML or formatting.

Checked by rendering with markdown-it-py in its GFM-like mode with linkify on (bare URLs,
``www.`` hosts and e-mail addresses become links there, as in Streamlit's GFM renderer)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from markdown_it.token import Token

from loopscope.model import escape_for_display, escape_markdown, markdown_code

_MD = MarkdownIt("gfm-like")  # tables, strikethrough, linkify, raw HTML allowed (worst case)
_MD.options["html"] = True

HOSTILE = [
    "![x](https://attacker.invalid/pixel.png)",
    "[click](javascript:alert(1))",
    "<img src=https://attacker.invalid/p.png>",
    "<script>alert(1)</script>",
    "`` ` `` tool`name",
    "close the span ` then ![img](https://a.invalid/i.png)",
    "https://attacker.invalid/path?x=1",
    "www.attacker.invalid",
    "someone@attacker.invalid",
    "<https://attacker.invalid>",
    "**bold** _it_ ~~gone~~ ==mark==",
    "# heading",
    "> quote",
    "- item",
    "1. item",
    "| a | b |\n|---|---|\n| c | d |",
    "---",
    ":red[coloured] :material/warning: $x^2$",
    "&lt;img src=x&gt; &amp; &#60;",
    "[ref]: https://attacker.invalid/ref\n[ref]",
    "line1\nline2\r\n\tTabbed\x00nul\u202eevil",
    "\\`escaped\\` backslashes \\\\",
]

_FORMATTING = {"link_open", "image", "html_inline", "html_block", "code_inline", "em_open",
               "strong_open", "s_open", "heading_open", "blockquote_open", "bullet_list_open",
               "ordered_list_open", "table_open", "fence", "code_block", "hr"}


def _walk(tokens: list[Token]) -> list[Token]:
    out: list[Token] = []
    for token in tokens:
        out.append(token)
        out.extend(_walk(token.children or []))
    return out


def _rendered(markdown: str) -> tuple[set[str], str]:
    """The token types and the plain text of ``markdown``."""
    tokens = _walk(_MD.parse(markdown))
    text = "".join(t.content for t in tokens if t.type in ("text", "text_special", "code_inline"))
    return {t.type for t in tokens}, text


@pytest.mark.parametrize("payload", HOSTILE)
def test_hostile_strings_render_as_plain_text(payload: str) -> None:
    types, text = _rendered(f"Tool {escape_markdown(payload)} failed.")
    assert not types & _FORMATTING, types & _FORMATTING
    assert text == f"Tool {escape_for_display(payload)} failed."


def test_the_payloads_are_live_without_escaping() -> None:
    """The test above can fail: the renderer does see these as links, images and HTML."""
    live = set()
    for payload in HOSTILE:
        types, _ = _rendered(f"Tool {escape_for_display(payload)} failed.")
        live |= types & _FORMATTING
    assert {"image", "link_open", "html_inline", "code_inline", "strong_open"} <= live


@settings(max_examples=400, derandomize=True, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=60))
def test_any_string_renders_as_itself(payload: str) -> None:
    types, text = _rendered(f"Tool {escape_markdown(payload)} failed.")
    assert not types & _FORMATTING
    assert text == f"Tool {escape_for_display(payload)} failed."


@pytest.mark.parametrize("payload", HOSTILE)
def test_code_spans_hold_any_string(payload: str) -> None:
    tokens = _walk(_MD.parse(f"Tool {markdown_code(payload)} failed."))
    codes = [t for t in tokens if t.type == "code_inline"]
    assert len(codes) == 1
    assert codes[0].content.strip(" ") == escape_for_display(payload).strip(" ")
    assert not {t.type for t in tokens} & (_FORMATTING - {"code_inline"})


def test_limit_is_applied_before_escaping() -> None:
    assert escape_markdown("a" * 10 + "[", 5) == "aaaaa…"
    assert escape_markdown("[x]") == "\\[x\\]"


def _escape_one_by_one(text: str, limit: int | None = None) -> str:
    """The rule of ``escape_for_display``, character by character (its first form): the
    reference its table and printable fast path are held to."""
    out = []
    for ch in text:
        code = ord(ch)
        if ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif 0x80 <= code < 0xA0 or code in (0x200B, 0x200C, 0x200D, 0x200E, 0x200F, 0x2028,
                                             0x2029, 0x2060, 0xFEFF) \
                or 0x202A <= code < 0x202F or 0x2066 <= code < 0x206A:
            out.append(f"\\u{code:04x}")
        else:
            out.append(ch)
    escaped = "".join(out)
    return escaped[:limit] + "…" if limit is not None and len(escaped) > limit else escaped


_TRICKY = st.sampled_from(["\n", "\r", "\t", "\x00", "\x1b", "\x7f", "\x85", "\x9f", "\xa0",
                           "\xad", "\u200b", "\u200f", "\u2028", "\u202e", "\u2066", "\u2069",
                           "\u206a", "\u3000", "\ufeff", "\U000e0001", "é", " ", "a"])


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(st.characters(), _TRICKY), max_size=60).map("".join),
       st.one_of(st.none(), st.integers(0, 80)))
def test_escape_for_display_equals_the_character_by_character_rule(text: str,
                                                                   limit: int | None) -> None:
    assert escape_for_display(text, limit) == _escape_one_by_one(text, limit)
