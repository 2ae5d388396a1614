"""Where rules come from and reading their files: the shipped pack, the user's config
folder, $TUNEADVISOR_RULES and each --rules DIR, later overriding earlier.

Compiling the shipped pack costs more than the rest of a small report, so ``load_rules(...,
cached=True)`` keeps the compiled rules in the user's cache folder as JSON (never a pickle),
named by a hash of every rule file's path and bytes and of the compiler's own source. A cache
file is only data: each rule read back is checked as compiling checks it
(``advisor.rules.rule_from_data``), and a file that is missing, unreadable, corrupt or wrong
in any way is ignored: the rules are compiled, as without a cache.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Protocol

from tuneadvisor.advisor.rules import Rule, RuleError, parse_rule
from tuneadvisor.errors import InputError
from tuneadvisor.files import (
    MAX_CONFIG_INPUT,
    is_directory,
    path_exists,
    read_regular_file,
    read_text_input,
)


def load_rule(path: Path) -> Rule:
    try:
        # A regular file of at most MAX_CONFIG_INPUT: a FIFO or /dev/zero named *.toml
        # would block or never end.
        text = read_text_input(path, "rule file", MAX_CONFIG_INPUT)
    except InputError as exc:
        raise RuleError(f"{path}:1", exc.problem) from None
    return parse_rule(path, text)


def load_rules(dirs: Iterable[Path], *, cached: bool = False) -> tuple[Rule, ...]:
    """Rules of every folder, in order; a later folder's rule replaces an earlier one's id.
    ``cached``: read them from, or else write them to, the user's cache (see above)."""
    paths: list[Path] = []
    for folder in dirs:
        if not is_directory(folder):
            raise RuleError(f"{folder}:1", "rules folder not found")
        paths += sorted(folder.glob("*.toml"))
    cache = _RuleCache.of(paths) if cached else None
    if cache is not None:
        rules = cache.read()
        if rules is not None:
            return rules
    by_id: dict[str, Rule] = {}
    for path in paths:
        rule = load_rule(path)
        by_id[rule.id] = rule
    rules = tuple(by_id.values())
    if cache is not None:
        cache.write(rules)
    return rules


CACHE_FORMAT = 1  # bump when what rule_data writes changes meaning
MAX_CACHE_BYTES = 4 << 20  # the shipped pack's file is about 60 KiB
KEEP_CACHE_FILES = 8  # rule packs remembered (each --rules DIR set is one)


def user_cache_dir(env: Mapping[str, str] | None = None) -> Path | None:
    """$XDG_CACHE_HOME/tuneadvisor, else ~/.cache/tuneadvisor; None without a home."""
    env = os.environ if env is None else env
    base = env.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):  # the XDG spec: a relative value is ignored
        try:
            base = str(Path.home() / ".cache")
        except RuntimeError:  # no $HOME and no passwd entry
            return None
    return Path(base) / "tuneadvisor"


class _RuleCache:
    """One rule pack's cache file: its name is the hash of what compiling it reads."""

    def __init__(self, path: Path, key: str) -> None:
        self.path = path
        self.key = key

    @classmethod
    def of(cls, paths: list[Path]) -> _RuleCache | None:
        folder = user_cache_dir()
        if folder is None:
            return None
        try:
            from _blake2 import blake2b  # hashlib would load OpenSSL too, 2 ms of start-up
        except ImportError:  # pragma: no cover - an interpreter built without it
            from hashlib import blake2b

        import tuneadvisor
        from tuneadvisor.advisor import expressions, facts, findings, rules
        from tuneadvisor.trainscript import fact_rows

        digest: _Digest = blake2b(f"tuneadvisor {tuneadvisor.__version__} {CACHE_FORMAT}".encode())
        try:
            # The compiler's own source: a changed fact table or check makes a new key.
            for module in (rules, expressions, facts, findings, fact_rows):
                _add(digest, Path(str(module.__file__)).read_bytes())
            for path in paths:
                _add(digest, os.fsencode(path))
                _add(digest, read_regular_file(path, "rule file", MAX_CONFIG_INPUT))
        except (InputError, OSError):  # load_rule says what is wrong, with the file and line
            return None
        key = digest.hexdigest()
        return cls(folder / f"rules-{key[:32]}.json", key)

    def read(self) -> tuple[Rule, ...] | None:
        """The cached rules, or None for a missing file or anything not exactly as written."""
        import json

        from tuneadvisor.advisor.rules import rule_from_data
        from tuneadvisor.files import read_bytes_input

        try:
            data = json.loads(read_bytes_input(self.path, "rule cache", MAX_CACHE_BYTES))
            if not isinstance(data, dict) or data.keys() != {"format", "key", "rules"}:
                return None
            if data["format"] != CACHE_FORMAT or data["key"] != self.key:
                return None
            if not isinstance(data["rules"], list):
                return None
            return tuple(rule_from_data(item) for item in data["rules"])
        except (InputError, ValueError, RecursionError):  # absent, unreadable or not so
            return None

    def write(self, rules: tuple[Rule, ...]) -> None:
        """Write the cache, but only of rules that read back equal (a TOML date in a case
        does not: that pack is compiled every time); a failure to write is no error."""
        import json
        import tempfile

        from tuneadvisor.advisor.rules import rule_data, rule_from_data

        try:  # first the folder: where none can be made, serializing would be for nothing
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError:
            return
        try:
            items = [rule_data(rule) for rule in rules]
            text = json.dumps({"format": CACHE_FORMAT, "key": self.key, "rules": items})
            if tuple(rule_from_data(item) for item in json.loads(text)["rules"]) != rules:
                return
        except (TypeError, ValueError):
            return
        try:
            # A temporary file renamed over the name: a reader never sees half a file, and a
            # link planted at the name is replaced, not followed (files.write_atomic follows).
            fd, tmp = tempfile.mkstemp(prefix=".rules-", suffix=".tmp", dir=self.path.parent)
            try:
                with os.fdopen(fd, "wb") as out:
                    out.write(text.encode())
                os.replace(tmp, self.path)
            finally:
                Path(tmp).unlink(missing_ok=True)
            _prune(self.path.parent)
        except OSError:
            return


class _Digest(Protocol):
    def update(self, data: bytes, /) -> None: ...
    def hexdigest(self) -> str: ...


def _add(digest: _Digest, data: bytes) -> None:
    digest.update(len(data).to_bytes(8, "little"))  # length first: no two inputs hash alike
    digest.update(data)


def _prune(folder: Path) -> None:
    """Keep the KEEP_CACHE_FILES most recently written rule caches."""
    files = sorted(folder.glob("rules-*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in files[KEEP_CACHE_FILES:]:
        old.unlink(missing_ok=True)


def default_rules_dir() -> Path:
    """The shipped pack: rules/ beside the package in a checkout, or inside the wheel."""
    here = Path(__file__).resolve().parent.parent
    for candidate in (here / "rules", here.parent / "rules"):
        if is_directory(candidate):
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
