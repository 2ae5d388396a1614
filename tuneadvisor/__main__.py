from tuneadvisor.cli import main

raise SystemExit(main())
