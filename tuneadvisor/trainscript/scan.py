"""Facts from a training script, read from its AST: the script is never imported or run.

What the advisor needs to know about the training script: where each DataLoader setting comes
from (a literal, a Slurm variable, the node's CPU count, a command-line option and what the job
passes for it), DDP and AMP use, and host syncs inside the step loop. The reading follows
simple assignments, dict literals merged into `**kwargs`, and argparse options within the one
file. What it cannot follow is reported as `variable` or `unknown` with the expression text,
never guessed, so the facts about it stay absent.

The reading is split by subject: `resolve` (values and their origins, with `argparse_options`
and `resolve_names`: a helper's parameter defaults, class attributes, what the program's
other modules define),
`scan_loaders` (DataLoaders and loader loops), `scan_syncs`, `scan_ddp`, `scan_settings` (AMP,
cudnn, threads), `script_facts` (the `ScriptScan` result and its flat facts). Names are read
through `names`, as line kinds read them, and the parse and scope index are the `ParsedScript`
line kinds use. What only the whole program shows (the script with the local modules it
imports: the launch line's options its parser refuses, the GPUs it can drive) is
`program_facts`, with `cli_parser`, `launch_options` and `scan_devices`.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping

from tuneadvisor.trainscript.node_index import NodeIndex
from tuneadvisor.trainscript.parsed import ParsedScript, parse_script
from tuneadvisor.trainscript.resolve import Resolver
from tuneadvisor.trainscript.resolve_names import Elsewhere
from tuneadvisor.trainscript.scans.ddp import scan_ddp
from tuneadvisor.trainscript.scans.length import run_length
from tuneadvisor.trainscript.scans.loaders import find_loaders, find_loops, pick_train_loader
from tuneadvisor.trainscript.scans.settings import scan_amp, scan_misc
from tuneadvisor.trainscript.scans.syncs import find_syncs

# ScriptScan lives with the facts it flattens to; callers import it from here, with scan_script.
from tuneadvisor.trainscript.script_facts import ScriptScan as ScriptScan


def scan_script(
    script: str | ParsedScript,
    launch_args: Mapping[str, str] | None = None,
    elsewhere: Elsewhere | None = None,
) -> ScriptScan:
    """Read a training script for the advisor. Never raises on bad source.

    Give a `ParsedScript` to share its parse and scope index with line kinds.
    `launch_args` maps options to the values the job's launch line passes
    (`{"--num-workers": "${SLURM_CPUS_PER_TASK}"}`); None means the launch line is unknown,
    and options then count at their defaults. `elsewhere`: what the local modules say (a parser
    built there, their module-level values, the importing file's calls of this one's
    functions).
    """
    parsed = parse_script(script) if isinstance(script, str) else script
    if parsed.error is not None:
        return ScriptScan(parse_error=parsed.error)
    try:
        return _scan_parsed(parsed, launch_args, elsewhere)
    except RecursionError:
        return ScriptScan(parse_error="too deeply nested to scan")


def _scan_parsed(
    parsed: ParsedScript,
    launch_args: Mapping[str, str] | None,
    elsewhere: Elsewhere | None,
) -> ScriptScan:
    index = NodeIndex(parsed)
    resolver = Resolver(index, launch_args, elsewhere)
    loaders = find_loaders(index, resolver)
    loops = find_loops(index, loaders)
    cudnn, threads, omp = scan_misc(index, resolver)
    return ScriptScan(
        dataloaders=tuple(loaders),
        train_loader_index=pick_train_loader(loaders, list(loops.values())),
        loops=tuple(loops.values()),
        syncs=tuple(find_syncs(index, loops)),
        options=dict(resolver.options),
        ddp=scan_ddp(index, resolver),
        amp=scan_amp(index, resolver),
        cudnn_benchmark=cudnn,
        torch_threads=threads,
        omp_num_threads=omp,
        import_at=import_position(parsed),
        length=run_length(resolver),
    )


def import_position(parsed: ParsedScript) -> int:
    """After the module docstring and any ``from __future__`` imports, which must stay
    first; else after a shebang and coding comments."""
    end = 0
    for index, node in enumerate(parsed.tree.body if parsed.tree is not None else []):
        docstring = (
            index == 0
            and isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        )
        future = isinstance(node, ast.ImportFrom) and node.module == "__future__"
        if not (docstring or future):
            break
        end = node.end_lineno or node.lineno
    if end:
        return end
    lines = parsed.text_lines
    while end < len(lines) and lines[end].startswith("#"):
        end += 1
    return end
