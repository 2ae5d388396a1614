"""The ``#SBATCH`` arguments of one hetjob component read as sbatch's getopt_long reads them:
attached or separate values, abbreviated long names, short letters run together."""

from __future__ import annotations

from dataclasses import dataclass, field

from tuneadvisor.slurm.jobscript.plugins import plugin_option
from tuneadvisor.slurm.jobscript.syntax import (
    INVALID_DIRECTIVE,
    SITE_PLUGIN_OPTION,
    Directive,
    Problem,
    Token,
)
from tuneadvisor.slurm.options import Arg, SbatchOption, match_long, short_option, validate


@dataclass
class _Getopt:
    """getopt_long over the arguments of one component, collecting problems on the way."""

    tokens: list[tuple[int, Token]]  # (index in JobScript.tokens, token)
    directives: list[Directive] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    plugin_tokens: list[int] = field(default_factory=list)  # a site plugin's options, values
    position: int = 0

    def run(self) -> None:
        while self.position < len(self.tokens):
            index, token = self.tokens[self.position]
            self.position += 1
            if token.value == "--":
                self._end_of_options()
            elif token.value.startswith("--"):
                self._long(index, token)
            elif token.value.startswith("-") and token.value != "-":
                self._short(index, token)
            else:
                message = f"Invalid directive found in batch script: {token.value}"
                self._problem(token, None, message)

    def _end_of_options(self) -> None:
        """getopt stops at "--"; sbatch then refuses whatever follows. Reading goes on here
        so that the rest is still seen."""
        if self.position < len(self.tokens):
            token = self.tokens[self.position][1]
            self._problem(token, None, f"Invalid directive found in batch script: {token.value}")

    def _problem(self, token: Token, option: str | None, message: str) -> None:
        self.problems.append(Problem(INVALID_DIRECTIVE, token.line, option, message, True))

    def _plugin(self, index: int, token: Token, name: str, attached: bool) -> bool:
        """A site plugin's option (``--image=...`` of Shifter): a note, its value taken as
        getopt would take it where the plugin is loaded. False when it is none."""
        option = plugin_option(name)
        if option is None:
            return False
        if option.arg is Arg.NONE and attached:
            self._problem(token, None, f"option '--{name}' doesn't allow an argument")
            return True
        value = self._next_value() if option.arg is Arg.REQUIRED and not attached else None
        if option.arg is Arg.REQUIRED and not attached and value is None:
            self._problem(token, None, f"option '--{name}' requires an argument")
            return True
        self.plugin_tokens += [index] if value is None else [index, value[0]]
        message = (
            f"--{name} is an option of {option.plugin}: that site's sbatch checks it, not this one"
        )
        self.problems.append(Problem(SITE_PLUGIN_OPTION, token.line, name, message, False))
        return True

    def _next_value(self) -> tuple[int, Token] | None:
        if self.position >= len(self.tokens):
            return None
        self.position += 1
        return self.tokens[self.position - 1]

    def _long(self, index: int, token: Token) -> None:
        spelled, equals, _ = token.value[2:].partition("=")
        match = match_long(spelled, token.value)
        if match.option is None and self._plugin(index, token, spelled, bool(equals)):
            return
        if match.option is None:
            self._problem(token, None, match.error or f"unrecognized option '{token.value}'")
            return
        option = match.option
        spelling = f"--{spelled}"
        value_at = 3 + len(spelled) if equals else None
        if option.arg is Arg.NONE and equals:
            self._problem(token, option.name, f"option '--{option.name}' doesn't allow an argument")
            return
        if option.arg is Arg.REQUIRED and not equals:
            self._separate_value(index, token, option, spelling, None)
            return
        self._record(index, token, option, spelling, None, value_at, None)

    def _short(self, index: int, token: Token) -> None:
        for letter in range(1, len(token.value)):
            option = short_option(token.value[letter])
            if option is None:
                self._problem(token, None, f"invalid option -- '{token.value[letter]}'")
                continue
            spelling = f"-{token.value[letter]}"
            rest = letter + 1 < len(token.value)
            if option.arg is Arg.NONE:
                self._record(index, token, option, spelling, letter, None, None)
                continue
            if option.arg is Arg.REQUIRED and not rest:
                self._separate_value(index, token, option, spelling, letter)
            else:
                value_at = letter + 1 if rest else None
                self._record(index, token, option, spelling, letter, value_at, None)
            return

    def _separate_value(
        self, index: int, token: Token, option: SbatchOption, spelling: str, letter: int | None
    ) -> None:
        taken = self._next_value()
        if taken is None:
            self._problem(token, option.name, f"option '{spelling}' requires an argument")
            self._record(index, token, option, spelling, letter, None, None, check=False)
            return
        self._record(index, token, option, spelling, letter, None, taken[0], value=taken[1].value)

    def _record(
        self,
        index: int,
        token: Token,
        option: SbatchOption,
        spelling: str,
        letter: int | None,
        value_at: int | None,
        value_token: int | None,
        *,
        value: str | None = None,
        check: bool = True,
    ) -> None:
        if value is None and value_at is not None:
            value = token.value[value_at:]
        directive = Directive(
            option.name,
            value or "",
            token.line,
            spelling,
            token.component,
            index,
            letter,
            value_at,
            value_token,
        )
        self.directives.append(directive)
        error = validate(option.name, value) if check else None
        if error:
            self._problem(token, option.name, error)


def read_options(
    tokens: tuple[Token, ...], components: int
) -> tuple[list[Directive], list[Problem], list[int]]:
    """The options read, the problems, and the tokens a site plugin's options took (read
    where that plugin is loaded: neither an sbatch option nor a refused word)."""
    directives: list[Directive] = []
    problems: list[Problem] = []
    plugin_tokens: list[int] = []
    for component in range(components):
        ours = [(i, t) for i, t in enumerate(tokens) if t.component == component]
        getopt = _Getopt(ours)
        getopt.run()
        directives += getopt.directives
        problems += getopt.problems
        plugin_tokens += getopt.plugin_tokens
    return directives, problems, plugin_tokens
