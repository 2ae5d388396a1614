"""Runs, profiles and recordings side by side: the tables, plots and scaling of `compare`."""
