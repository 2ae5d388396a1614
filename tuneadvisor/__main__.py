"""`python -m tuneadvisor`: cli.main, with a Ctrl-C at any moment an exit status of 130 and
no traceback, including while cli itself loads and after main has returned."""

try:
    from tuneadvisor.cli import main

    status = main()
except KeyboardInterrupt:
    status = 130  # cli.EXIT_INTERRUPTED, which may not have loaded yet
try:
    import signal

    # The work is done: a Ctrl-C now would only turn the exit into a traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
except KeyboardInterrupt:
    pass
raise SystemExit(status)
