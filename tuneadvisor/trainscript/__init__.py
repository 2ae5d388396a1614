"""trainscript."""
