"""Closed-loop tuning: short trials over the knobs the findings point at (`tune`)."""
