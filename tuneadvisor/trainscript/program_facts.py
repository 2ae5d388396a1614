"""Facts of the training program as a whole: the script and the local modules it imports,
read together (`script.unknown_option.*`, `script.single_gpu`). The session reads the
modules; this only looks at their parses."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from tuneadvisor.trainscript.cli_parser import read_parser
from tuneadvisor.trainscript.launch_options import unknown_options
from tuneadvisor.trainscript.parsed import ParsedScript
from tuneadvisor.trainscript.scan_devices import device_use


def program_facts(
    modules: Sequence[ParsedScript], launch_words: Iterable[str] | None
) -> dict[str, object]:
    """``modules``: the training script first, then its local modules. ``launch_words``: the
    options the job's launch line passes to the script (None without a launch line)."""
    facts: dict[str, object] = {}
    if not modules or modules[0].tree is None:
        return facts
    if launch_words is not None:
        unknown = unknown_options(launch_words, read_parser(modules))
        facts["script.unknown_option.count"] = len(unknown)
        if unknown:
            facts["script.unknown_options"] = "; ".join(u.text for u in unknown)
    use = device_use(modules)
    if use.single and use.line is not None:
        facts["script.single_gpu"] = True
        facts["script.single_gpu.line"] = use.line
    return facts
