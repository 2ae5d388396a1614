"""Syntax highlighting as plain Rich Text lines (foreground only), in the app theme's colors.

Table cells need one Rich Text per line without a background (the cursor row paints its
own), so this takes Textual's highlighter (Pygments tokens -> theme variables such as
`$text-accent`) and resolves the variables against the running theme.
"""

from __future__ import annotations

from collections.abc import Mapping

from rich.style import Style
from rich.text import Text
from textual.highlight import highlight

from tuneadvisor.numbers import is_ascii_digits
from tuneadvisor.present.terminal_safe import one_line_safe


def resolve_style(spec: str, variables: Mapping[str, str]) -> Style:
    """'bold $text-success 80%' -> bold in text-success's color.

    Backgrounds ('on X') are dropped; an alpha of 70 % or less becomes dim.
    """
    kept: list[str] = []
    words = iter(spec.split())
    for word in words:
        if word == "on":  # backgrounds would fight the table's cursor and stripes
            next(words, None)
            continue
        if word.endswith("%"):  # translucent text: faint ones (comments) become dim
            if is_ascii_digits(word[:-1]) and int(word[:-1]) <= 70:
                kept.append("dim")
            continue
        if word.startswith("$"):
            value = variables.get(word[1:], "")
            if not value.startswith("#"):  # 'auto 87%' and friends: keep the default
                continue
            word = value
        kept.append(word)
    try:
        return Style.parse(" ".join(kept)) if kept else Style.null()
    except Exception:  # an unexpected word in a theme: no style rather than a crash
        return Style.null()


class Highlighter:
    """Highlights code into one Text per line, with styles resolved for one theme."""

    def __init__(self, variables: Mapping[str, str]) -> None:
        self._variables = dict(variables)
        self._cache: dict[str, Style] = {}

    def _style(self, spec: str | object) -> Style:
        if not isinstance(spec, str):
            return Style.null()
        style = self._cache.get(spec)
        if style is None:
            style = self._cache[spec] = resolve_style(spec, self._variables)
        return style

    def lines(self, code: str, language: str) -> list[Text]:
        """``code`` highlighted: exactly one Text per line of ``code.splitlines()``."""
        # an ESC in the source or the job script must not reach the terminal
        source_lines = [one_line_safe(line.expandtabs(8)) for line in code.splitlines()]
        if not source_lines:
            return []
        joined = "\n".join(source_lines)
        content = highlight(joined, language=language)
        text = Text(content.plain)
        for span in content.spans:
            style = self._style(span.style)
            if style:
                text.stylize(style, span.start, span.end)
        out = list(text.split("\n", allow_blank=True))[: len(source_lines)]
        while len(out) < len(source_lines):  # never fewer lines than given
            out.append(Text(source_lines[len(out)]))
        return out
