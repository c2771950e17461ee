from roster.cli import main

raise SystemExit(main())
