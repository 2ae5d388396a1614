"""The launch line: the command in a job script's body that runs the training code.

- ``model``: what a launch line holds (``LaunchLine``, ``Launcher``, ``option_values``).
- ``search``: find the launch lines of a job script (``find_launches``, ``find_launch``).
- ``edit``: set an option on the launch line, on the job-script model (untouched bytes stay).
- ``lexing``, ``launchers``, ``commands``: the small shell lexer, the launcher option tables,
  and the walk from a command down to the training script.
- ``variables``: the variables the script sets before the line (``SCRIPT=train.py``),
  expanded as far as that needs no running.
"""
