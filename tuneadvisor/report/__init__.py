"""Renderers of a Workspace: text, markdown and the JSON interface of DESIGN.md."""
