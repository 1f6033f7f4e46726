"""Extract the real tool call from a Codex code-mode ``exec`` input.

The JavaScript is **tokenized, never executed**: a small scanner skips string literals, template
literals and comments while it looks for ``tools.<name>(`` occurrences; the single argument must
be a literal in JSON5 syntax (or an identifier bound to one earlier by ``const|let|var``), which a
small recursive-descent reader turns into a Python value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

__all__ = ["Extraction", "LiteralError", "extract_code_mode_call", "parse_literal"]

_MAX_DEPTH = 200
_MAX_INPUT = 16 * 1024 * 1024  # larger inputs are not scanned (fallback)


@dataclass(frozen=True, slots=True)
class Extraction:
    ok: bool
    name: str | None = None
    arguments: Any = None
    reason: str | None = None


class LiteralError(ValueError):
    """The text at this position is not a supported literal."""

    def __init__(self, message: str, pos: int):
        super().__init__(f"{message} at offset {pos}")
        self.pos = pos


def _is_id_start(ch: str) -> bool:
    return ch.isalpha() or ch in "_$" or (ord(ch) > 0x7F and ch.isidentifier())


def _is_id_char(ch: str) -> bool:
    return ch.isalnum() or ch in "_$" or ch in "\u200c\u200d" or (
        ord(ch) > 0x7F and ("a" + ch).isidentifier())


def _identifier_end(src: str, i: int) -> int:
    """The index just past the identifier whose first character is ``src[i]``: the first
    character is the caller's to check (an identifier start, or a backslash it rejects later),
    every later one is an identifier character."""
    n = len(src)
    i += 1
    while i < n and _is_id_char(src[i]):
        i += 1
    return i


# --------------------------------------------------------------------------- scanning


def _skip_string(src: str, i: int) -> int:
    """``src[i]`` is a quote; return the index after the closing quote (or len on EOF)."""
    quote = src[i]
    n = len(src)
    i += 1
    while i < n:
        ch = src[i]
        if ch == "\\":
            i += 2
            continue
        if ch == quote:
            return i + 1
        if quote != "`" and ch == "\n":
            return i  # unterminated line string: stop at the newline
        if quote == "`" and ch == "$" and i + 1 < n and src[i + 1] == "{":
            i = _skip_substitution(src, i + 2)
            continue
        i += 1
    return n


def _skip_substitution(src: str, i: int) -> int:
    """Skip a template substitution body starting after ``${``; return index after ``}``."""
    depth = 1
    n = len(src)
    while i < n:
        ch = src[i]
        if ch in "'\"`":
            i = _skip_string(src, i)
            continue
        if ch == "/" and i + 1 < n and src[i + 1] in "/*":
            i = _skip_comment(src, i)
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return n


def _skip_comment(src: str, i: int) -> int:
    if src.startswith("//", i):
        end = src.find("\n", i)
        return len(src) if end < 0 else end
    end = src.find("*/", i + 2)
    return len(src) if end < 0 else end + 2


def _skip_ws(src: str, i: int) -> int:
    n = len(src)
    while i < n:
        ch = src[i]
        if ch.isspace() or ch == "\ufeff":
            i += 1
        elif ch == "/" and i + 1 < n and src[i + 1] in "/*":
            i = _skip_comment(src, i)
        else:
            break
    return i


@dataclass(frozen=True, slots=True)
class _Occurrence:
    name: str
    open_paren: int


def _scan(src: str) -> tuple[list[_Occurrence], list[tuple[str, int]]]:
    """Collect ``tools.<name>(`` occurrences and ``const|let|var <id> =`` binding positions.

    A binding is ``(identifier, index just after '=')``.
    """
    occurrences: list[_Occurrence] = []
    bindings: list[tuple[str, int]] = []
    n = len(src)
    i = 0
    prev_sig = ""  # last significant (non-space, non-comment) character before the current token
    while i < n:
        ch = src[i]
        if ch in "'\"`":
            i = _skip_string(src, i)
            prev_sig = ch
            continue
        if ch == "/" and i + 1 < n and src[i + 1] in "/*":
            i = _skip_comment(src, i)
            continue
        if ch.isspace():
            i += 1
            continue
        if _is_id_start(ch):
            start = i
            i = _identifier_end(src, i)
            word = src[start:i]
            if word == "tools" and prev_sig != ".":
                j = i
                if j < n and src[j] == ".":
                    k = j + 1
                    if k < n and _is_id_start(src[k]):
                        m = _identifier_end(src, k)
                        name = src[k:m]
                        p = _skip_ws(src, m)
                        if p < n and src[p] == "(":
                            occurrences.append(_Occurrence(name, p))
                            i = p + 1
                            prev_sig = "("
                            continue
            elif word in ("const", "let", "var") and prev_sig != ".":
                j = _skip_ws(src, i)
                if j < n and _is_id_start(src[j]):
                    k = _identifier_end(src, j)
                    ident = src[j:k]
                    p = _skip_ws(src, k)
                    if p < n and src[p] == "=" and not src.startswith("==", p) and not src.startswith("=>", p):
                        bindings.append((ident, p + 1))
            prev_sig = word[-1]
            continue
        if ch.isdigit():
            # numbers (including 0x..., 1e5, 1_000): consume identifier-ish characters
            i += 1
            while i < n and (_is_id_char(src[i]) or src[i] == "."):
                i += 1
            prev_sig = "0"
            continue
        prev_sig = ch
        i += 1
    return occurrences, bindings


# --------------------------------------------------------------------------- literals

_SIMPLE_ESCAPES = {
    "n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v",
    "'": "'", '"': '"', "\\": "\\", "`": "`", "/": "/", "$": "$",
}


class _LiteralReader:
    def __init__(self, src: str):
        self.src = src
        self.n = len(src)

    def fail(self, message: str, pos: int) -> LiteralError:
        return LiteralError(message, pos)

    def value(self, i: int, depth: int = 0) -> tuple[Any, int]:
        if depth > _MAX_DEPTH:
            raise self.fail("nesting too deep", i)
        i = _skip_ws(self.src, i)
        if i >= self.n:
            raise self.fail("unexpected end of input", i)
        ch = self.src[i]
        if ch == "{":
            return self.obj(i, depth)
        if ch == "[":
            return self.arr(i, depth)
        if ch in "'\"`":
            return self.string(i)
        if ch in "+-.0123456789" or self.src.startswith(("Infinity", "NaN"), i):
            return self.number(i)
        if _is_id_start(ch):
            j = _identifier_end(self.src, i)
            word = self.src[i:j]
            if word == "true":
                return True, j
            if word == "false":
                return False, j
            if word == "null":
                return None, j
            raise _NotLiteral(word, i)
        raise self.fail(f"unexpected character {ch!r}", i)

    def obj(self, i: int, depth: int) -> tuple[Any, int]:
        result: dict[str, Any] = {}
        i += 1
        while True:
            i = _skip_ws(self.src, i)
            if i >= self.n:
                raise self.fail("unterminated object", i)
            ch = self.src[i]
            if ch == "}":
                return result, i + 1
            if ch in "'\"":
                key, i = self.string(i)
            elif _is_id_start(ch) or ch == "\\":
                j = _identifier_end(self.src, i)
                key = self.src[i:j]
                if "\\" in key:
                    raise self.fail("escaped identifier key", i)
                i = j
            else:
                raise self.fail(f"unexpected character {ch!r} in object key", i)
            i = _skip_ws(self.src, i)
            if i >= self.n or self.src[i] != ":":
                raise self.fail("expected ':' after object key", i)
            value, i = self.value(i + 1, depth + 1)
            result[key] = value
            closed, i = self.after_item(i, "}", "object")
            if closed:
                return result, i

    def after_item(self, i: int, close: str, what: str) -> tuple[bool, int]:
        """What follows an object member or an array element: ``(False, i)`` past a comma
        (another item or, as JavaScript allows a trailing comma, the closer comes next) or
        ``(True, i)`` past ``close``; anything else is a syntax error in the ``what``."""
        i = _skip_ws(self.src, i)
        if i < self.n and self.src[i] == ",":
            return False, i + 1
        if i < self.n and self.src[i] == close:
            return True, i + 1
        raise self.fail(f"expected ',' or '{close}' in {what}", i)

    def arr(self, i: int, depth: int) -> tuple[Any, int]:
        result: list[Any] = []
        i += 1
        while True:
            i = _skip_ws(self.src, i)
            if i >= self.n:
                raise self.fail("unterminated array", i)
            if self.src[i] == "]":
                return result, i + 1
            if self.src[i] == ",":
                raise self.fail("array hole", i)
            value, i = self.value(i, depth + 1)
            result.append(value)
            closed, i = self.after_item(i, "]", "array")
            if closed:
                return result, i

    def _escape(self, i: int, out: list[str]) -> int:
        """``src[i]`` is the character after a backslash; append its value, return next index."""
        src = self.src
        if i >= self.n:
            raise self.fail("unterminated escape", i)
        ch = src[i]
        if ch in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[ch])
            return i + 1
        if ch == "0" and not (i + 1 < self.n and src[i + 1].isdigit()):
            out.append("\0")
            return i + 1
        if ch == "x":
            return self._hex_escape(i, 2, out)
        if ch == "u":
            if i + 1 < self.n and src[i + 1] == "{":
                end = src.find("}", i + 2)
                digits = src[i + 2:end] if end > 0 else ""
                if not digits or not _is_hex(digits) or int(digits, 16) > 0x10FFFF:
                    raise self.fail("bad \\u{} escape", i)
                out.append(chr(int(digits, 16)))
                return end + 1
            return self._hex_escape(i, 4, out)
        if ch == "\r":
            return i + 2 if src.startswith("\r\n", i) else i + 1  # line continuation
        if ch in "\n\u2028\u2029":
            return i + 1
        if ch.isdigit():
            raise self.fail("octal escape", i)
        out.append(ch)  # identity escape
        return i + 1

    def _hex_escape(self, i: int, width: int, out: list[str]) -> int:
        """``\\x`` (``width`` 2) or ``\\u`` (``width`` 4) at ``src[i]``: exactly ``width`` hex
        digits follow, the code unit they spell is appended; returns the index past them."""
        digits = self.src[i + 1:i + 1 + width]
        if len(digits) != width or not _is_hex(digits):
            raise self.fail(f"bad \\{self.src[i]} escape", i)
        out.append(chr(int(digits, 16)))
        return i + 1 + width

    def string(self, i: int) -> tuple[str, int]:
        """The string literal quoted by ``src[i]`` (``'``, ``"`` or a backquote): its value and
        the index after its closing quote.

        A template literal (backquoted) reads as a quoted one but for line breaks and ``${``:
        it keeps a line break (CR and CRLF read as LF, as JavaScript reads them) where a quoted
        string fails, and a ``${`` in it is a substitution (:class:`_Substitution`): a value
        known only when the code runs."""
        quote = self.src[i]
        template = quote == "`"
        out: list[str] = []
        i += 1
        start = i
        src = self.src
        while i < self.n:
            ch = src[i]
            if ch == quote:
                out.append(src[start:i])
                return _join_surrogates("".join(out)), i + 1
            if ch == "\\":
                out.append(src[start:i])
                i = self._escape(i + 1, out)
                start = i
                continue
            if not template:
                if ch in "\n\r":
                    raise self.fail("newline in string literal", i)
            elif ch == "$" and i + 1 < self.n and src[i + 1] == "{":
                raise _Substitution(i)
            elif ch == "\r":
                out.append(src[start:i])
                out.append("\n")
                i += 2 if src.startswith("\r\n", i) else 1
                start = i
                continue
            i += 1
        raise self.fail(f"unterminated {'template' if template else 'string'} literal", i)

    def number(self, i: int) -> tuple[Any, int]:
        src = self.src
        start = i
        sign = 1
        if src[i] in "+-":
            sign = -1 if src[i] == "-" else 1
            i += 1
        if src.startswith("Infinity", i) or src.startswith("NaN", i):
            raise self.fail("non-finite number", start)
        if src.startswith(("0x", "0X"), i):
            j = i + 2
            while j < self.n and (_is_hex(src[j]) or src[j] == "_"):
                j += 1
            digits = src[i + 2:j].replace("_", "")
            if not digits:
                raise self.fail("bad hex number", start)
            return sign * int(digits, 16), j
        j = i
        while j < self.n and (src[j].isdigit() or src[j] in "._eE" or (
                src[j] in "+-" and j > i and src[j - 1] in "eE")):
            j += 1
        text = src[i:j].replace("_", "")
        if not text or text == "." or text[0] in "eE":
            raise self.fail("bad number", start)
        if text.isdigit():
            whole = int(text)
            if whole <= 2**53:
                return sign * whole, j
        try:
            value = float(text)
        except ValueError:
            raise self.fail("bad number", start) from None
        if not math.isfinite(value):
            raise self.fail("non-finite number", start)
        value = sign * value
        # JavaScript numbers are doubles; an integral one is written as an integer by JSON.
        if value.is_integer() and abs(value) <= 2**53:
            return int(value), j
        return value, j


class _NotLiteral(Exception):
    def __init__(self, word: str, pos: int):
        super().__init__(word)
        self.word = word
        self.pos = pos


class _Substitution(Exception):
    def __init__(self, pos: int):
        super().__init__(pos)
        self.pos = pos


def _is_hex(text: str) -> bool:
    return all(c in "0123456789abcdefABCDEF" for c in text)


def _join_surrogates(text: str) -> str:
    """Combine surrogate pairs written as two ``\\u`` escapes into one character."""
    if not any("\ud800" <= c <= "\udfff" for c in text):
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "surrogatepass")


def parse_literal(text: str) -> Any:
    """Parse a whole text as one JSON5/JS literal (used by tests and by the extractor)."""
    reader = _LiteralReader(text)
    value, end = reader.value(0)
    end = _skip_ws(text, end)
    if end != len(text):
        raise LiteralError("trailing text after literal", end)
    return value


# --------------------------------------------------------------------------- extraction


def extract_code_mode_call(src: Any) -> Extraction:
    """Find the single ``tools.<name>(<literal>)`` call in a code-mode ``exec`` input."""
    if not isinstance(src, str):
        return Extraction(False, reason="the exec input is not a string")
    if len(src) > _MAX_INPUT:
        return Extraction(False, reason="the exec input is too large to scan")
    try:
        occurrences, bindings = _scan(src)
    except RecursionError:  # pragma: no cover - the scanner is iterative
        return Extraction(False, reason="the exec input could not be scanned")
    if not occurrences:
        return Extraction(False, reason="no tools.<name>( call in the script")
    if len(occurrences) > 1:
        names = ", ".join(sorted({o.name for o in occurrences}))
        return Extraction(False, reason=f"{len(occurrences)} tools calls in the script ({names})")
    occurrence = occurrences[0]
    reader = _LiteralReader(src)
    start = _skip_ws(src, occurrence.open_paren + 1)
    if start < len(src) and src[start] == ")":
        return Extraction(True, occurrence.name, None)
    try:
        read = _read_literal(reader, start, "the argument is not a literal", "the argument")
    except _NotLiteral as exc:
        ident_end = exc.pos + len(exc.word)
        after = _skip_ws(src, ident_end)
        if after >= len(src) or src[after] != ")":
            return Extraction(False, reason="the argument is an expression, not a literal")
        return _bound_identifier(src, reader, exc.word, exc.pos, bindings, occurrence)
    if isinstance(read, Extraction):
        return read
    value, end = read
    after = _skip_ws(src, end)
    if after < len(src) and src[after] == ",":
        rest = _skip_ws(src, after + 1)
        if not (rest < len(src) and src[rest] == ")"):
            return Extraction(False, reason="several arguments")
        after = rest
    if after >= len(src) or src[after] != ")":
        return Extraction(False, reason="the argument is an expression, not a literal")
    return Extraction(True, occurrence.name, value)


def _read_literal(reader: _LiteralReader, pos: int, not_literal: str,
                  subject: str) -> tuple[Any, int] | Extraction:
    """The literal at ``pos`` and where it ends, or the refusal that says why the reader could
    not read one (``not_literal`` heads the reader's own message, ``subject`` names what is
    nested too deeply). A bare identifier (:class:`_NotLiteral`) is raised on: the argument
    may name a bound literal, a bound value may not, so each caller decides."""
    try:
        return reader.value(pos)
    except _Substitution:
        return Extraction(False, reason="a template literal with substitutions")
    except LiteralError as exc:
        return Extraction(False, reason=f"{not_literal} ({exc})")
    except RecursionError:
        return Extraction(False, reason=f"{subject} is nested too deeply")


def _bound_identifier(src: str, reader: _LiteralReader, ident: str, use_pos: int,
                      bindings: list[tuple[str, int]], occurrence: _Occurrence) -> Extraction:
    candidates = [pos for name, pos in bindings if name == ident and pos < use_pos]
    if not candidates:
        return Extraction(False, reason=f"the argument {ident!r} is not bound to a literal")
    if len([name for name, _ in bindings if name == ident]) > 1:
        return Extraction(False, reason=f"the identifier {ident!r} is bound several times")
    pos = candidates[-1]
    try:
        read = _read_literal(reader, pos, f"{ident!r} is not bound to a literal",
                             "the bound literal")
    except _NotLiteral:
        return Extraction(False, reason=f"{ident!r} is bound to an expression, not a literal")
    if isinstance(read, Extraction):
        return read
    value, end = read
    # the statement must end right after the literal: ';', a newline, or the end of input
    j = end
    while j < len(src) and src[j] in " \t":
        j += 1
    if j < len(src) and src[j] not in ";\n\r" and not src.startswith(("//", "/*"), j):
        return Extraction(False, reason=f"{ident!r} is bound to an expression, not a literal")
    return Extraction(True, occurrence.name, value)
