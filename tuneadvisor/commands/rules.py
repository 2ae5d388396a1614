"""`tuneadvisor rules list | show ID | check [DIR ...]`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from tuneadvisor.commands.inputs import add_rules_option
from tuneadvisor.errors import InputError

if TYPE_CHECKING:
    from tuneadvisor.advisor.rules import Rule

HELP = "list, show or check rule files"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="rules_command", metavar="ACTION", required=True)
    list_p = actions.add_parser("list", help="the rules in force, one line each")
    show_p = actions.add_parser("show", help="one rule in full")
    show_p.add_argument("rule_id", metavar="ID")
    check_p = actions.add_parser("check", help="validate a folder of rules and run its cases")
    check_p.add_argument("dirs", nargs="*", metavar="DIR", help="default: the rules in force")
    for action in (list_p, show_p, check_p):
        add_rules_option(action)


def _show(rule: Rule) -> str:
    out = [
        f"{rule.id}  [{rule.severity.value}]  {rule.title}",
        f"  file: {rule.path}",
        f"  group: {rule.group}",
        f"  when: {rule.when.text}",
    ]
    if rule.params:
        out.append("  params: " + ", ".join(f"{k} = {v!r}" for k, v in rule.params.items()))
    for section, table in rule.suggest.items():
        for key, expr in table.items():
            out.append(f"  suggest {section} {key} = {expr.text}")
    out += ["", *("  " + line for line in rule.rationale.strip().splitlines())]
    if rule.references:
        out += ["", *(f"  see {ref}" for ref in rule.references)]
    out.append(f"  cases: {len(rule.cases)}")
    return "\n".join(out)


def run(args: argparse.Namespace) -> int:
    from tuneadvisor.advisor.engine import run_cases
    from tuneadvisor.workspace.rule_files import load_rules, rule_dirs

    if args.rules_command == "check" and args.dirs:
        dirs = [Path(d) for d in args.dirs]
    else:
        dirs = rule_dirs(args.rules)
    rules = load_rules(dirs)  # validation errors raise RuleError (FILE:LINE: problem)
    if args.rules_command == "list":
        for rule in rules:
            print(f"{rule.id:34} {rule.severity.value:8} {rule.title}")
        return 0
    if args.rules_command == "show":
        match = next((r for r in rules if r.id == args.rule_id), None)
        if match is None:
            raise InputError(
                None, f"no rule with id '{args.rule_id}' (see `tuneadvisor rules list`)"
            )
        print(_show(match))
        return 0
    results = run_cases(rules)
    failed = [r for r in results if not r.passed]
    for result in failed:
        for problem in result.problems:
            print(
                f"FAIL {result.rule.path}:{result.case.line}: {result.rule.id}: "
                f"{result.case.name}: {problem}"
            )
    print(
        f"{len(rules)} rules, {len(results) - len(failed)} cases passed, {len(failed)} failed",
        file=sys.stdout,
    )
    return 1 if failed else 0
