"""The run record that ``tuneadvisor run`` writes (``run.json``): its model and its bounded,
typed reader. Below the session, so that both ``relaunch`` (which writes and compares runs)
and ``workspace/gather`` (which reads the record beside a profile) read it one way.
"""

# The file name alone, for a reader that looks for a record before it loads the model.
RECORD_NAME = "run.json"
