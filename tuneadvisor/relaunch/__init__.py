"""Relaunch the bundled training scripts and keep a record of every run.

Layer: above ``report``/``workspace`` (it may read a report), below the command-line faces.
torch is never imported here: the training scripts run as separate processes, with the
interpreter that has torch (``--python``, ``$TUNEADVISOR_TORCH_PYTHON``, else this one).
"""
