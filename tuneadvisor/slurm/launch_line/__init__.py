"""The launch line: the command in a job script's body that runs the training code.

- ``model``: what a launch line holds (``LaunchLine``, ``Launcher``, ``option_values``).
- ``search``: find the launch lines of a job script (``find_launches``),
  through the job's own shell scripts, and name a hand-off that cannot be followed.
- ``choose``: which of several launches is the training (staging and evaluation aside).
- ``edit``: set an option on the launch line, on the job-script model (untouched bytes stay).
- ``lexing``, ``launchers``, ``commands``: the small shell lexer (and the quote bash would
  find unclosed), the launcher option tables, and the walk from a command down to the
  training script.
- ``variables``: the variables the script sets before the line (``SCRIPT=train.py``),
  expanded as far as that needs no running.
- ``background``: launches started with ``&`` that nothing after them waits for.
- ``step_tasks``: the tasks per node the launch's ``srun`` line asks for itself.
"""
