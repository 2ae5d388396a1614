"""`tuneadvisor jobs`: your recent Slurm jobs with state, efficiency and top finding, to pick
one to look at (`tuneadvisor report --jobid ID`, `open --jobid ID`)."""

from __future__ import annotations

import argparse

from tuneadvisor.commands.inputs import add_rules_option
from tuneadvisor.errors import InputError

HELP = "your recent Slurm jobs: state, efficiency, top finding"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--user", help="whose jobs (default: you)")
    parser.add_argument(
        "--since", default="now-7days", help="as sacct -S reads it (default: now-7days)"
    )
    parser.add_argument("--limit", type=int, default=20, help="newest N jobs (default: 20)")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    add_rules_option(parser)


def run(args: argparse.Namespace) -> int:
    import getpass
    import json
    from dataclasses import asdict

    from tuneadvisor.present.jobs_table import render_rows
    from tuneadvisor.slurm.client import SlurmClient
    from tuneadvisor.workspace.jobs import recent_job_rows
    from tuneadvisor.workspace.rule_files import load_rules, rule_dirs

    if args.limit < 1:
        raise InputError(None, "jobs: --limit must be at least 1")
    rules = load_rules(rule_dirs(args.rules))
    user = args.user or getpass.getuser()
    rows = recent_job_rows(SlurmClient(), user, args.since, args.limit, rules)
    if args.format == "json":
        print(json.dumps([asdict(r) for r in rows], indent=2))
        return 0
    if not rows:
        print(f"no jobs of {user} since {args.since}")
        return 0
    print(render_rows(rows), end="")
    print("\nlook at one: tuneadvisor report --jobid ID   (or: tuneadvisor open --jobid ID)")
    return 0
