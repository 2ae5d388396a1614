"""The plan's ``export`` goes where bash runs it exactly when the launch runs, or not at all.

Held over generated job scripts (if/then, loops, case arms, functions, ``&&``/``||`` chains,
here-documents and arrays, nested): the tuned script parses (``bash -n``) and, run with
stand-in ``srun`` and ``python`` on the PATH, starts the same commands in the same order as
the original, only with the new environment.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tuneadvisor.slurm.jobscript.exports import with_exports
from tuneadvisor.slurm.jobscript.model import JobScript
from tuneadvisor.slurm.launch_line.choose import choose_launch
from tuneadvisor.slurm.launch_line.search import find_launches

BASH = shutil.which("bash")
pytestmark = pytest.mark.skipif(BASH is None, reason="no bash")

HEAD = "#!/bin/bash\n#SBATCH --ntasks-per-node=2\n#SBATCH --cpus-per-task=8\n"
LAUNCH = "srun python train.py --epochs 1"
EXPORTS = {"SRUN_CPUS_PER_TASK": "$SLURM_CPUS_PER_TASK", "OMP_NUM_THREADS": "4"}

# Each wraps {L}: a launch, or another wrapper. Conditions read RUN and MODE, set or not.
_WRAPPERS = [
    'if [ -n "${RUN:-}" ]; then\n  {L}\nfi',
    'if [ -n "${RUN:-}" ]\nthen {L}\nfi',
    'if [ -n "${RUN:-}" ]; then {L}; fi',
    'if [ -n "${RUN:-}" ]; then\n  echo skipped\nelse {L}\nfi',
    "for i in 1 2; do\n  {L}\ndone",
    "for i in 1 2\ndo {L}\ndone",
    "n=0\nwhile [ $n -lt 2 ]; do n=$((n + 1))\n  {L}\ndone",
    'case "${MODE:-a}" in\n  a) {L};;\n  *) echo other;;\nesac',
    'case "${MODE:-a}" in\n  b) echo other;;\n  a)\n    {L}\n    ;;\nesac',
    "run() {\n  {L}\n}\nrun",
    "run() { {L}; }\nrun",
    '[ -n "${RUN:-}" ] && {L}',
    '[ -n "${RUN:-}" ] || {L}',
    "cd . &&\n  {L}",
    "echo start |\n  {L}",
    "cat <<EOF >/dev/null\nsrun python other.py\nEOF\n{L}",
    "{L} || echo failed",
    "time {L}",
]
# Only around a simple command: an array literal holding the launch, run after.
_ARRAY = 'cmd=(\n  {L}\n)\n"${cmd[@]}"'

_STANDIN = (
    '#!/bin/bash\necho "{name} $*|${{SRUN_CPUS_PER_TASK-unset}}|${{OMP_NUM_THREADS-unset}}"'
    ' >> "$LOG"\n{rest}'
)


def _standins(folder: Path) -> None:
    for name, rest in (("srun", 'exec "$@"\n'), ("python", "")):
        path = folder / name
        path.write_text(_STANDIN.format(name=name, rest=rest))
        path.chmod(0o755)


def _run(script: str, folder: Path, env: dict[str, str]) -> list[tuple[str, str]]:
    path, log = folder / "job.sh", folder / "log"
    path.write_text(script)
    log.write_text("")
    standin_path = f"{folder / 'bin'}{os.pathsep}/usr/bin{os.pathsep}/bin"
    full = {"PATH": standin_path, "LOG": str(log), "SLURM_CPUS_PER_TASK": "8", **env}
    assert BASH is not None
    subprocess.run(
        [BASH, str(path)], env=full, cwd=folder, capture_output=True, timeout=30, check=False
    )
    rows = [line.split("|", 1) for line in log.read_text().splitlines()]
    return [(row[0], row[1]) for row in rows]


def _parses(script: str, folder: Path) -> bool:
    path = folder / "check.sh"
    path.write_text(script)
    assert BASH is not None
    return subprocess.run([BASH, "-n", str(path)], capture_output=True, check=False).returncode == 0


@st.composite
def _scripts(draw: st.DrawFn) -> str:
    body = _ARRAY.replace("{L}", LAUNCH) if draw(st.booleans()) else LAUNCH
    for wrapper in draw(st.lists(st.sampled_from(_WRAPPERS), max_size=2)):
        body = wrapper.replace("{L}", body)
    before = draw(st.sampled_from(["", "module load pytorch || true\n", "# setup\n\n"]))
    return HEAD + before + body + "\n"


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=_scripts(),
    run=st.sampled_from([None, "1"]),
    mode=st.sampled_from([None, "a", "b"]),
)
def test_tuned_script_runs_the_same_commands_only_with_the_new_environment(
    text: str, run: str | None, mode: str | None
) -> None:
    job = JobScript.parse(text)
    launches = find_launches(job)
    launch = choose_launch(launches)
    if launch is None:
        return
    notes: list[str] = []
    tuned = with_exports(job, launch, EXPORTS, notes).render_text()
    env = {key: value for key, value in (("RUN", run), ("MODE", mode)) if value is not None}
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        (folder / "bin").mkdir()
        _standins(folder / "bin")
        assume(_parses(text, folder))  # a wrapper around an array literal may not be bash
        assert _parses(tuned, folder), tuned
        before = _run(text, folder, env)
        after = _run(tuned, folder, env)
    assert [command for command, _ in after] == [command for command, _ in before], tuned
    assert {row for _, row in before} <= {"unset|unset"}
    assert {row for _, row in after} <= {"unset|unset", "8|4"}, tuned
    if tuned == text:
        assert notes and "not written" in notes[0]
    elif len(launches) == 1:
        # written: every start of the launch sees the new environment
        launched = [row for command, row in after if command.startswith("srun python train.py")]
        assert set(launched) <= {"8|4"}, tuned


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ('if [ -n "${RUN:-}" ]\nthen LAUNCH\nfi\n', "compound command"),
        ("for i in 1\ndo LAUNCH\ndone\n", "compound command"),
        ('case "$M" in\n  a) LAUNCH;;\nesac\n', "compound command"),
        ('cmd=(\n  LAUNCH\n)\n"${cmd[@]}"\n', "array literal"),
        ("cd /work && LAUNCH\n", "only when"),
        ("cd /work &&\n\n  LAUNCH\n", "continues"),
        ("run() { LAUNCH; }\nrun\n", "compound command"),
    ],
)
def test_an_unsafe_place_gets_a_note_not_a_line(body: str, why: str) -> None:
    job = JobScript.parse(HEAD + body.replace("LAUNCH", LAUNCH))
    launch = choose_launch(find_launches(job))
    assert launch is not None
    notes: list[str] = []
    assert with_exports(job, launch, {"OMP_NUM_THREADS": "4"}, notes) is job
    assert len(notes) == 1 and "not written" in notes[0] and why in notes[0], notes


@pytest.mark.parametrize(
    "body",
    [
        'if [ -n "${RUN:-}" ]; then\n  LAUNCH\nfi\n',
        "for i in 1; do\n  LAUNCH\ndone\n",
        'case "$M" in\n  a)\n    LAUNCH\n    ;;\nesac\n',
        "run() {\n  LAUNCH\n}\nrun\n",
        "LAUNCH | tee log.txt\n",
        "time LAUNCH || exit 1\n",
    ],
)
def test_a_safe_place_gets_the_line(body: str) -> None:
    job = JobScript.parse(HEAD + body.replace("LAUNCH", LAUNCH))
    launch = choose_launch(find_launches(job))
    assert launch is not None
    notes: list[str] = []
    tuned = with_exports(job, launch, {"OMP_NUM_THREADS": "4"}, notes)
    assert notes == []
    assert "export OMP_NUM_THREADS=4\n" in tuned.render_text()
