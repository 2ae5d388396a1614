"""script.*: the training script (--script, else the one the job's launch line runs)
scanned, with the local modules it imports and the one that builds its DataLoader."""

from __future__ import annotations

from tuneadvisor.advisor.evidence import NotRead
from tuneadvisor.workspace.read_files import read_training_script, script_parse
from tuneadvisor.workspace.readers.base import Gathering, Reader, ScriptRead

WHAT = "the training script"


def _read(state: Gathering) -> None:
    read, analysis = state.job, state.analysis
    said = len(state.notes)
    path, text = read_training_script(state.inputs, read.launch, state.notes, read.unfollowed)
    # what read_training_script said is why the script named in the job was not read
    state.notes_as_not_read(WHAT, said)
    if text is None:
        state.sharpen.append("the training script (--script, or a job script that runs it)")
        state.script = ScriptRead(path, text)
        return
    from tuneadvisor.trainscript.parsed import parse_script
    from tuneadvisor.trainscript.scan import scan_script

    launch_args = read.launch.options if read.launch is not None else None
    source = script_parse(path, text, analysis)
    parsed = parse_script(source) if isinstance(source, str) else source
    if path is None:  # read_training_script gives a text with its path: kept for safety
        scan = scan_script(parsed, launch_args)
        state.facts.update(scan.facts())
        state.script = ScriptRead(path, text, scan)
        return
    from tuneadvisor.trainscript.program_facts import unresolved_workers
    from tuneadvisor.workspace.loader_module import follow_loader
    from tuneadvisor.workspace.script_modules import program_evidence, read_program

    # The script with the local modules it imports: what they define is the script's too.
    program = read_program(path, parsed)
    scan = scan_script(parsed, launch_args, program.elsewhere(program.names[0]))
    if scan.parse_error:
        state.cannot_read(path, f"does not parse ({scan.parse_error}); not scanned")
    state.facts.update(scan.facts())
    facts, notes = program_evidence(program, read.launch, analysis, read.programs)
    state.facts.update(facts)
    state.notes += notes
    followed = follow_loader(path, text, scan, program.elsewhere)
    if followed.module is not None:
        state.facts.update(followed.module.facts)
    if followed.note is not None:
        state.notes.append(followed.note)
    unresolved = unresolved_workers(state.facts, program.names[0])
    if unresolved is not None:
        state.not_read.append(NotRead.said(unresolved, "the DataLoader's worker count"))
    state.script = ScriptRead(path, text, scan, followed.module)


READER = Reader(WHAT, _read)
