"""How things read: the words and tables shared by report, the TUI and the watch summary."""
