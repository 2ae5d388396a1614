"""The advisor: facts from every input, rules over them, findings, and the plan they make."""
