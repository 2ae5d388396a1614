"""Profiles: safe .lprof loading, the frozen model, source lookup and line kinds."""
