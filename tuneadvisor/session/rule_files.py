"""Where rules come from and reading their files: the shipped pack, the user's config
folder, $TUNEADVISOR_RULES and each --rules DIR, later overriding earlier."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from tuneadvisor.advisor.rules import Rule, RuleError, parse_rule
from tuneadvisor.errors import InputError
from tuneadvisor.files import MAX_CONFIG_INPUT, path_exists, read_text_input


def load_rule(path: Path) -> Rule:
    try:
        # A regular file of at most MAX_CONFIG_INPUT: a FIFO or /dev/zero named *.toml
        # would block or never end.
        text = read_text_input(path, "rule file", MAX_CONFIG_INPUT)
    except InputError as exc:
        raise RuleError(f"{path}:1", exc.problem) from None
    return parse_rule(path, text)


def load_rules(dirs: Iterable[Path]) -> tuple[Rule, ...]:
    """Rules of every folder, in order; a later folder's rule replaces an earlier one's id."""
    by_id: dict[str, Rule] = {}
    for folder in dirs:
        if not folder.is_dir():
            raise RuleError(f"{folder}:1", "rules folder not found")
        for path in sorted(folder.glob("*.toml")):
            rule = load_rule(path)
            by_id[rule.id] = rule
    return tuple(by_id.values())


def default_rules_dir() -> Path:
    """The shipped pack: rules/ beside the package in a checkout, or inside the wheel."""
    here = Path(__file__).resolve().parent.parent
    for candidate in (here / "rules", here.parent / "rules"):
        if candidate.is_dir():
            return candidate
    return here / "rules"


RULES_ENV = "TUNEADVISOR_RULES"


def rule_dirs(extra: Iterable[str] = (), env: Mapping[str, str] | None = None) -> list[Path]:
    """Where rules come from, later overriding earlier: the shipped pack, the user's
    config dir ($XDG_CONFIG_HOME/tuneadvisor/rules, if present), $TUNEADVISOR_RULES
    (colon-separated), then each --rules DIR."""
    import os

    env = os.environ if env is None else env
    dirs = [default_rules_dir()]
    config_home = Path(env.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    user_dir = config_home / "tuneadvisor" / "rules"
    if path_exists(user_dir, "rules folder of the user's config") and user_dir.is_dir():
        dirs.append(user_dir)
    dirs += [Path(p) for p in env.get(RULES_ENV, "").split(":") if p]
    dirs += [Path(p) for p in extra]
    return dirs
