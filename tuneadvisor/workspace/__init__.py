"""Every input gathered into one workspace, and the plan turned into tuned files."""
