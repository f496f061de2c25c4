"""Write a changed YAML document back as line edits of the original text, so that every line outside
the changed keys stays byte for byte (comments, blank lines, quoting, flow or block style).

A ruamel.yaml round trip re-emits the whole file: it re-indents a file written with other indent
settings, and a key appended to a mapping lands after the comments that introduce the next section
(ruamel attaches them to the last key before them). Here the change is found by comparing the
document before and after (`splice`): each key added, removed or changed is one splice of the
original lines, found by the key's position (ruamel's `lc`) and its value's indentation, and rendered
alone. A scalar keeps its end-of-line comment. A flow collection (`{a: 1}`, `[x, y]`) or a list that
changed length is re-rendered whole. The result is checked to load to exactly the changed document;
`SpliceError` when it does not.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq


class SpliceError(Exception):
    """The line edits would not reproduce the changed document (a layout this module cannot edit)."""


@dataclass(frozen=True)
class _Splice:
    start: int  # first original line replaced (0-based)
    end: int  # one past the last line replaced; == start for an insertion
    lines: list[str]


def splice(text: str, before: CommentedMap, after: CommentedMap, yaml: YAML) -> str:
    """`text` (which `before` was loaded from) edited so that it loads as `after`."""
    lines = text.splitlines(keepends=True)
    edits = sorted(_mapping_edits(before, after, lines, yaml), key=lambda s: (s.start, s.end), reverse=True)
    if edits and edits[0].start == len(lines) and lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"  # a key added after a last line without its newline
    for edit in edits:
        lines[edit.start : edit.end] = edit.lines
    result = "".join(lines)
    if _plain(YAML(typ="safe", pure=True).load(result)) != _plain(after):
        raise SpliceError("the line edits do not load as the changed document")
    return result


def _mapping_edits(before: CommentedMap, after: CommentedMap, lines: list[str], yaml: YAML) -> list[_Splice]:
    edits = [_Splice(*_span(before, key, lines), []) for key in before if key not in after]
    added: dict[int, list[str]] = {}  # line -> new keys inserted there, in `after`'s order
    # A new key goes after the last key before it that was already there, else after the mapping's last.
    previous = next(reversed(before))
    for key in after:
        if key not in before:
            at = _span(before, previous, lines)[1]
            added.setdefault(at, []).extend(_render(key, after[key], " " * _key_column(before), ("", 0), yaml))
            continue
        previous = key
        if _plain(before[key]) != _plain(after[key]):
            edits += _value_edits(before, after, key, lines, yaml)
    return edits + [_Splice(at, at, new_lines) for at, new_lines in added.items()]


def _value_edits(before: CommentedMap, after: CommentedMap, key: Any, lines: list[str], yaml: YAML) -> list[_Splice]:
    """One changed key: into its value where both sides are block collections of the same shape,
    else the key and its value re-rendered in place."""
    old, new = before[key], after[key]
    if _block(old, CommentedMap) and _block(new, CommentedMap):
        return _mapping_edits(old, new, lines, yaml)
    if _block(old, CommentedSeq) and _block(new, CommentedSeq) and len(old) == len(new):
        pairs = [(o, n) for o, n in zip(old, new, strict=True) if _plain(o) != _plain(n)]
        if all(_block(o, CommentedMap) and _block(n, CommentedMap) for o, n in pairs):
            return [edit for o, n in pairs for edit in _mapping_edits(o, n, lines, yaml)]
    start, end = _span(before, key, lines)
    line, column = before.lc.key(key)
    prefix, comment = lines[line][:column], _end_of_line_comment(before, key, lines)
    return [_Splice(start, end, _render(key, new, prefix, comment, yaml))]


def _render(key: Any, value: Any, prefix: str, comment: tuple[str, int], yaml: YAML) -> list[str]:
    """`key: value` as the file's YAML settings write it, the first line after `prefix` (the indent,
    or a list item's `- `), the others indented to the key. A one-line result keeps the end-of-line
    `comment` (its text and column: kept where the new line is short enough, else one space after)."""
    buffer = io.StringIO()
    yaml.dump(CommentedMap([(key, _fresh(value))]), buffer)
    rendered = buffer.getvalue().splitlines()
    indent = " " * len(prefix)
    out = [prefix + rendered[0]] + [indent + line if line else line for line in rendered[1:]]
    text, column = comment
    if text and len(out) == 1:
        out[0] = (out[0].ljust(column) if len(out[0]) < column else out[0] + " ") + text
    return [line + "\n" for line in out]


def _span(mapping: CommentedMap, key: Any, lines: list[str]) -> tuple[int, int]:
    """(first line, one past the last line) of `key` and its value: the key's line and every line
    after it indented deeper than the key (a compact list's `- ` at the key's own indent too), up to
    the last such line with content; blank and comment lines after that belong to what follows."""
    first, column = mapping.lc.key(key)
    compact_list = isinstance(mapping[key], CommentedSeq)
    end = first + 1
    for number in range(first + 1, len(lines)):
        stripped = lines[number].strip()
        if not stripped or stripped.startswith("#"):
            continue
        indent = len(lines[number]) - len(lines[number].lstrip(" "))
        if indent > column or (compact_list and indent == column and stripped.startswith("- ")):
            end = number + 1
        else:
            break
    return first, end


def _end_of_line_comment(mapping: CommentedMap, key: Any, lines: list[str]) -> tuple[str, int]:
    """The `# …` after a scalar value on the key's own line and its column, or ('', 0)."""
    value = mapping[key]
    if isinstance(value, CommentedMap | CommentedSeq):
        return "", 0
    line, column = mapping.lc.value(key)
    text = lines[line].rstrip("\r\n")
    for position in range(_after_scalar(text, column), len(text)):
        if text[position] == "#" and text[position - 1] in " \t":
            return text[position:], position
    return "", 0


def _after_scalar(text: str, column: int) -> int:
    """Where a scalar starting at `column` ends: after its closing quote when quoted."""
    quote = text[column : column + 1]
    if quote not in ("'", '"'):
        return column
    position = column + 1
    while position < len(text):
        if text[position] == "\\" and quote == '"':
            position += 2
            continue
        if text[position] == quote:
            if quote == "'" and text[position + 1 : position + 2] == "'":  # '' inside single quotes
                position += 2
                continue
            return position + 1
        position += 1
    return position


def _key_column(mapping: CommentedMap) -> int:
    return mapping.lc.key(next(iter(mapping)))[1]


def _block(value: Any, kind: type) -> bool:
    return isinstance(value, kind) and not value.fa.flow_style()


def _fresh(value: Any) -> Any:
    """A copy without the original's comments (they stay on the lines they were on, or went with the
    changed key), keeping flow style and scalar styles."""
    if isinstance(value, dict):
        copy: Any = CommentedMap((k, _fresh(v)) for k, v in value.items())
    elif isinstance(value, list):
        copy = CommentedSeq(_fresh(v) for v in value)
    else:
        return value
    if getattr(value, "fa", None) is not None and value.fa.flow_style():
        copy.fa.set_flow_style()
    return copy


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value
