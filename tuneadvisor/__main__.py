"""`python -m tuneadvisor`: cli.main, with a Ctrl-C at any moment an exit status of 130 and
no traceback, including while cli itself loads and after main has returned."""

try:
    from tuneadvisor.cli import main

    status = main()
except KeyboardInterrupt:
    status = 130  # cli.EXIT_INTERRUPTED, which may not have loaded yet
try:
    # signal's C half, as cli uses (signal.py would build its enums, ~0.5 ms, for this one call)
    import _signal  # type: ignore[import-not-found]

    # The work is done: a Ctrl-C now would only turn the exit into a traceback.
    _signal.signal(_signal.SIGINT, _signal.SIG_IGN)
except KeyboardInterrupt:
    pass
raise SystemExit(status)
