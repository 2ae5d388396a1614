"""The accounting of a job: seff, sacct and jobstats read into models, and the job as it ran."""
