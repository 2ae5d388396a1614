"""The job-script model: ``JobScript`` parses a script losslessly, says which directives sbatch
applies and which problems it has, and edits directives or spans of text (every untouched
byte stays)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from tuneadvisor.slurm.jobscript.checks import (
    after_command_problems,
    conflicts,
    file_problems,
    hetjob_problem,
    read_header,
)
from tuneadvisor.slurm.jobscript.editing import (
    Edit,
    deletion_spans,
    quote_state,
    quote_style,
    render_value,
)
from tuneadvisor.slurm.jobscript.getopt import read_options
from tuneadvisor.slurm.jobscript.syntax import (
    EMPTY_SCRIPT,
    NOT_A_BATCH_SCRIPT,
    Directive,
    Line,
    Problem,
    Token,
    split_lines,
)
from tuneadvisor.slurm.options import (
    Arg,
    JobRequest,
    SbatchOption,
    find_option,
    parse_mail_type,
    validate,
)

__all__ = ["JobScript"]

# sbatch ORs every --mail-type it reads instead of keeping the last.
_ADDING_UP = frozenset({"mail-type"})
# Two names for one setting: the later one replaces the other.
_SAME_SETTING = {"requeue": "no-requeue", "no-requeue": "requeue"}
# Problems that make a file no job script at all (a Python file, an empty file).
_NOT_A_SCRIPT = frozenset({EMPTY_SCRIPT, NOT_A_BATCH_SCRIPT})
_BARE_CR = re.compile(r"\r(?!\n)")


@dataclass(frozen=True)
class JobScript:
    """A parsed job script. Build it with :meth:`parse` or :meth:`read`."""

    text: str
    path: Path | None
    lines: tuple[Line, ...]
    tokens: tuple[Token, ...]  # arguments of the directive lines sbatch reads
    occurrences: tuple[Directive, ...]  # every option read, in sbatch's order
    problems: tuple[Problem, ...]
    first_command_line: int | None  # where sbatch stops reading directives
    components: int  # heterogeneous-job components (1 for an ordinary job)
    plugin_tokens: frozenset[int] = frozenset()  # site plugin options and their values

    @classmethod
    def parse(cls, source: str | bytes, path: str | os.PathLike[str] | None = None) -> JobScript:
        """Parse a script; bytes that are not UTF-8 survive the round trip."""
        text = source.decode("utf-8", "surrogateescape") if isinstance(source, bytes) else source
        lines = split_lines(text)
        header = read_header(lines)
        tokens = tuple(header.tokens)
        directives, problems, plugin_tokens = read_options(tokens, header.components)
        after = lines[header.first_command :] if header.first_command else ()
        problems = [
            *file_problems(text, lines),
            *header.problems,
            *problems,
            *conflicts(directives, header.components),
            *hetjob_problem(header.separators),
            *after_command_problems(after),
        ]
        problems.sort(key=lambda p: p.line or 0)
        return cls(
            text,
            None if path is None else Path(path),
            lines,
            tokens,
            tuple(directives),
            tuple(problems),
            header.first_command,
            header.components,
            frozenset(plugin_tokens),
        )

    # -- reading

    def render(self) -> bytes:
        """The script's bytes (identical to the input when nothing was edited)."""
        return self.text.encode("utf-8", "surrogateescape")

    def render_text(self) -> str:
        return self.text

    def directives(self) -> dict[str, str]:
        """Long option name -> value as sbatch applies them: directives before the first
        command, first hetjob component only, the last one wins (``--mail-type`` adds up,
        as in sbatch). Options given without a value (``--hold``, ``--exclusive``) map to
        ""."""
        return _effective([d for d in self.occurrences if d.component == 0])

    def directive(self, name: str) -> Directive | None:
        """The occurrence that takes effect for an option (by any of its names)."""
        option = find_option(name)
        if option is None:
            return None
        found = [d for d in self.occurrences if d.component == 0 and d.name == option.name]
        return found[-1] if found else None

    def request(self) -> JobRequest:
        return JobRequest.from_directives(self.directives())

    @property
    def not_a_script(self) -> str | None:
        """Why this is no batch script at all (empty, or no ``#!`` first line), in sbatch's
        words with what to do instead; None for a file sbatch would read as one."""
        line_breaks = self._line_breaks_unread()
        if line_breaks is not None:
            return line_breaks
        problem = next((p for p in self.problems if p.id in _NOT_A_SCRIPT), None)
        if problem is None:
            return None
        if self.text.startswith("\ufeff"):
            return (
                "not a Slurm job script: it starts with a UTF-8 byte-order mark, and sbatch "
                "needs #! as its very first bytes; save it without the mark (BOM)"
            )
        hint = "give the job script you submit with sbatch, starting with a line like #!/bin/bash"
        if self.path is not None and self.path.suffix == ".py":
            hint = "this is a Python file: give it with --script, and " + hint
        return f"not a Slurm job script: sbatch refuses it ({problem.message}); {hint}"

    def _line_breaks_unread(self) -> str | None:
        """Lines ended by CR alone (classic Mac) before the first command: sbatch and bash
        split lines at LF only, so the directives and the command after the ``#!`` line
        are one comment; an edit would be inserted or appended where nothing reads it."""
        bare = _BARE_CR.search(self.text)
        if bare is None:
            return None
        first = self.first_command_line
        header_end = (
            sum(len(line.text) + len(line.ending) for line in self.lines[: first - 1])
            if first
            else len(self.text)
        )
        if bare.start() >= header_end:
            return None
        return (
            "its lines end in CR alone (old Mac line breaks): sbatch and bash read them as "
            "one line, so no directive or command after #! is read; convert them with "
            "tr '\\r' '\\n'"
        )

    @property
    def refused(self) -> bool:
        """sbatch would refuse to submit this script."""
        return any(p.fatal for p in self.problems)

    @property
    def line_ending(self) -> str:
        """The file's line break: "\\r\\n" when most lines use it, else "\\n"."""
        crlf = sum(1 for line in self.lines if line.ending == "\r\n")
        lf = sum(1 for line in self.lines if line.ending == "\n")
        return "\r\n" if crlf > lf else "\n"

    # -- editing

    def with_directive(self, name: str, value: str | None = None) -> JobScript:
        """Set an option's effective value. The directive that takes effect is changed in
        place, keeping its spelling, quoting, comment and line break; when there is none, a
        ``#SBATCH --name=value`` line is added after the last directive (after the ``#!``
        line when there are none). ``value`` is None (or "") for options without one."""
        option = _known_option(name)
        value = _checked_value(option, value)
        current = self.directive(option.name)
        edit = Edit(list(self.lines))
        if current is None:
            return self._with_line(option, value)
        changed = self._set_value(edit, current, value)
        if option.name in _ADDING_UP or option.name in _SAME_SETTING:
            changed |= self._remove(edit, self._others(option.name, current))
        return JobScript.parse(edit.render(), self.path) if changed else self

    def without_directive(self, name: str) -> JobScript:
        """Remove every occurrence of an option from the directives sbatch reads (a line
        left without arguments is removed with its comment)."""
        option = _known_option(name)
        found = [d for d in self.occurrences if d.component == 0 and d.name == option.name]
        edit = Edit(list(self.lines))
        if not self._remove(edit, found):
            return self
        return JobScript.parse(edit.render(), self.path)

    def unread_tokens(self) -> list[int]:
        """Directive arguments of the job (component 0) that are no option nor an option's
        value: what sbatch refuses as an unrecognized option or a stray word. A site plugin's
        options and their values are not among them: that site's sbatch reads them."""
        used = (
            {d.token for d in self.occurrences}
            | {d.value_token for d in self.occurrences if d.value_token is not None}
            | self.plugin_tokens
        )
        return [i for i, t in enumerate(self.tokens) if t.component == 0 and i not in used]

    def without_tokens(self, indices: Iterable[int]) -> JobScript:
        """Remove directive arguments by index (a line left without any is removed)."""
        wanted = set(indices)
        if not wanted:
            return self
        edit = Edit(list(self.lines))
        self._delete_tokens(edit, wanted)
        return JobScript.parse(edit.render(), self.path)

    def with_value_of(self, directive: Directive, value: str) -> JobScript:
        """Set the value of one occurrence (``with_directive`` sets the one in effect),
        keeping its spelling, quoting and comment."""
        edit = Edit(list(self.lines))
        if not self._set_value(edit, directive, value):
            return self
        return JobScript.parse(edit.render(), self.path)

    def without_occurrence(self, directive: Directive) -> JobScript:
        """Remove one occurrence of an option (with a value it takes from the next word)."""
        edit = Edit(list(self.lines))
        self._remove(edit, [directive])
        return JobScript.parse(edit.render(), self.path)

    def with_text(self, changes: Iterable[tuple[int, int, int, str]]) -> JobScript:
        """Replace spans of lines' text: ``(line, start, end, new)``, offsets in the line's
        text (without its line break). Every other byte stays as it was; the result is
        parsed again, so its directives and problems are up to date. Edits of the body
        (the launch line) go through here."""
        edit = Edit(list(self.lines))
        for number, start, end, new in changes:
            edit.span(number, start, end, new)
        return JobScript.parse(edit.render(), self.path)

    def edited(
        self,
        *,
        spans: Iterable[tuple[int, int, int, str]] = (),
        tokens: Iterable[int] = (),
        occurrences: Iterable[Directive] = (),
        values: Iterable[tuple[Directive, str]] = (),
    ) -> JobScript:
        """Several edits of distinct tokens in one edit and one parse: ``spans`` replaced
        (as ``with_text``), ``tokens`` removed (as ``without_tokens``), ``occurrences``
        removed (as ``without_occurrence``), ``values`` set (as ``with_value_of``). A
        repair of many directives re-parses the script once, not once per directive."""
        edit = Edit(list(self.lines))
        for number, start, end, new in spans:
            edit.span(number, start, end, new)
        for directive, value in values:
            self._set_value(edit, directive, value)
        removed = list(occurrences)
        if removed:
            self._remove(edit, removed)
        self._delete_tokens(edit, set(tokens))
        if not edit.replace and not edit.delete:
            return self
        return JobScript.parse(edit.render(), self.path)

    # -- editing helpers

    def _others(self, name: str, current: Directive) -> list[Directive]:
        """Occurrences besides ``current`` that still count: earlier --mail-type (they add
        up) and the other spelling of a two-name setting (--requeue/--no-requeue)."""
        names = {name, _SAME_SETTING.get(name, "")}
        return [
            d
            for d in self.occurrences
            if d.component == 0 and d.name in names and d.token != current.token
        ]

    def _remove(self, edit: Edit, found: list[Directive]) -> bool:
        by_token: dict[int, list[Directive]] = {}
        for directive in found:
            by_token.setdefault(directive.token, []).append(directive)
        gone: set[int] = set()
        for index, directives in by_token.items():
            gone |= self._remove_from_token(edit, index, directives)
        self._delete_tokens(edit, gone)
        return bool(found)

    def _line(self, number: int) -> Line:
        return self.lines[number - 1]

    def _raw(self, token: Token) -> str:
        return self._line(token.line).text[token.start : token.end]

    def _with_line(self, option: SbatchOption, value: str | None) -> JobScript:
        text = f"#SBATCH --{option.name}"
        if value is not None:
            text += "=" + render_value(value, None, at_start=False)
        anchor = self._insert_after()
        ending = self.line_ending
        lines = list(self.lines)
        if anchor and lines[anchor - 1].ending == "":
            lines[anchor - 1] = Line(anchor, lines[anchor - 1].text, ending)
            new = Line(0, text, "")
        else:
            new = Line(0, text, ending)
        lines.insert(anchor, new)
        return JobScript.parse("".join(line.text + line.ending for line in lines), self.path)

    def _insert_after(self) -> int:
        """The line after which a new directive goes (0: at the very top): after the last
        directive, but never between an option and a value it takes from a later line,
        nor after an option still waiting for its value (either would take the new line)."""
        floor = 1 if self.text.startswith("#!") else 0
        ours = [t.line for t in self.tokens if t.component == 0]
        if not ours:
            return floor
        blocked: set[int] = set()
        for directive in self.occurrences:
            if directive.component != 0:
                continue
            if directive.value_token is not None:
                blocked.update(range(directive.line, self.tokens[directive.value_token].line))
            elif not directive.has_value and _known_option(directive.name).arg is Arg.REQUIRED:
                blocked.update(range(directive.line, max(ours) + 1))
        return next((n for n in range(max(ours), floor, -1) if n not in blocked), floor)

    def _set_value(self, edit: Edit, current: Directive, value: str | None) -> bool:
        """Queue the change of one occurrence's value; False when nothing changes."""
        token = self.tokens[current.token]
        if value is None:
            if current.value_at is None:
                return False
            keep = current.value_at - (1 if current.letter is None else 0)  # drop "="
            self._rewrite(edit, token, keep, None)
            return True
        if value == "" and (current.letter is not None or current.value_token is not None):
            self._as_long_form(edit, current, value)
        elif current.value_token is not None:
            value_token = self.tokens[current.value_token]
            style = quote_style(self._raw(value_token))
            new = render_value(value, style, at_start=True)
            edit.span(value_token.line, value_token.start, value_token.end, new)
        elif current.value_at is not None:
            self._rewrite(edit, token, current.value_at, value)
        else:  # an optional value that was not given: attach one
            joiner = "" if current.letter is not None else "="
            new = self._raw(token) + joiner + render_value(value, None, at_start=False)
            edit.span(token.line, token.start, token.end, new)
        return True

    def _rewrite(self, edit: Edit, token: Token, keep: int, tail: str | None) -> None:
        """Keep the first ``keep`` characters of a token's value as written and put
        ``tail`` (a value, rendered) after them; requote the token when a quote spans both."""
        line_text = self._line(token.line).text
        cut = token.offsets[keep - 1] + 1
        open_quote = quote_state(line_text[token.start : cut])
        if open_quote and cut < token.end and line_text[cut] == open_quote:
            cut, open_quote = cut + 1, ""  # the quote closes right there
        if open_quote:
            whole = token.value[:keep] + (tail or "")
            new = render_value(whole, open_quote, at_start=True)
        else:
            style = quote_style(line_text[cut : token.end])
            new = line_text[token.start : cut]
            if tail is not None:
                new += render_value(tail, style, at_start=False)
        edit.span(token.line, token.start, token.end, new)

    def _as_long_form(self, edit: Edit, current: Directive, value: str) -> None:
        """Values short forms cannot carry (an empty one) are written ``--name=value``."""
        token = self.tokens[current.token]
        long_form = f"--{current.name}=" + render_value(value, None, at_start=False)
        if current.letter is not None and current.letter > 1:
            self._rewrite(edit, token, current.letter, None)
            edit.span(token.line, token.end, token.end, " " + long_form)
        else:
            edit.span(token.line, token.start, token.end, long_form)
        if current.value_token is not None:
            self._delete_tokens(edit, {current.value_token})

    def _remove_from_token(self, edit: Edit, index: int, found: list[Directive]) -> set[int]:
        """Take the found options out of one token; returns the tokens to delete."""
        token = self.tokens[index]
        gone = {d.value_token for d in found if d.value_token is not None}
        if found[0].letter is None:  # a long option owns its whole token
            return gone | {index}
        removed = {d.letter for d in found}
        kept = [d for d in self.occurrences if d.token == index and d.letter not in removed]
        if not kept:
            return gone | {index}
        new_value = "-" + "".join(token.value[d.letter or 0] for d in kept)
        if kept[-1].value_at is not None:
            new_value += token.value[kept[-1].value_at :]
        if token.value.startswith(new_value):  # what is left is written as it was
            self._rewrite(edit, token, len(new_value), None)
        else:
            new = render_value(new_value, None, at_start=True)
            edit.span(token.line, token.start, token.end, new)
        return gone

    def _delete_tokens(self, edit: Edit, indices: set[int]) -> None:
        """Delete tokens; a directive line left with none of its arguments goes entirely."""
        by_line: dict[int, list[int]] = {}
        for index in indices:
            by_line.setdefault(self.tokens[index].line, []).append(index)
        if not by_line:
            return
        on_lines: dict[int, set[int]] = {}  # once, not per line: thousands of tokens
        for i, t in enumerate(self.tokens):
            on_lines.setdefault(t.line, set()).add(i)
        for number, deleted in by_line.items():
            if on_lines.get(number, set()) <= set(deleted):
                edit.delete.add(number)
                continue
            text = self._line(number).text
            spans = [(self.tokens[i].start, self.tokens[i].end) for i in deleted]
            for start, end in deletion_spans(text, spans):
                edit.span(number, start, end, "")


def _effective(read: list[Directive]) -> dict[str, str]:
    effective: dict[str, str] = {}
    mail: list[str] = []
    for directive in read:
        effective.pop(_SAME_SETTING.get(directive.name, ""), None)
        effective[directive.name] = directive.value
        if directive.name == "mail-type":
            mail.append(directive.value)
    if len(mail) > 1:  # sbatch ORs the flags of every --mail-type; NONE adds nothing
        adding = [value for value in mail if _mail_flags(value) != frozenset()]
        effective["mail-type"] = ",".join(adding) if adding else mail[-1]
    return effective


def _mail_flags(value: str) -> frozenset[str] | None:
    try:
        return parse_mail_type(value)
    except ValueError:
        return None


def _known_option(name: str) -> SbatchOption:
    option = find_option(name)
    if option is None:
        raise ValueError(f"unknown sbatch option: {name!r}")
    return option


def _checked_value(option: SbatchOption, value: str | None) -> str | None:
    """The value to write (None: no value), or ValueError when sbatch would refuse it."""
    if value is not None and any(c in value for c in "\n\r\0"):
        raise ValueError(f"--{option.name}: a directive value cannot hold a line break or NUL")
    if option.arg is not Arg.REQUIRED and not value:
        return None
    if option.arg is Arg.REQUIRED and value is None:
        raise ValueError(f"option '--{option.name}' requires an argument")
    error = validate(option.name, value)
    if error:
        raise ValueError(error)
    return value
