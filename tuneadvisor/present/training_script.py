"""Which training script the advice read, and the launch chain that runs it: one line that
the text and markdown reports both write."""

from __future__ import annotations

from tuneadvisor.workspace.load import Workspace


def training_script_line(workspace: Workspace) -> str | None:
    """'Training script: train.py, run as srun -> torchrun -> train.py', or None."""
    advice = workspace.advice
    if advice is None or (advice.script_path is None and advice.launch_chain is None):
        return None
    if advice.script_path is None:
        return f"Training script: not read; the job runs {advice.launch_chain}"
    if workspace.inputs.script is not None:
        return f"Training script: {advice.script_path} (--script)"
    via = f", run as {advice.launch_chain}" if advice.launch_chain else ""
    return f"Training script: {advice.script_path}{via}"
