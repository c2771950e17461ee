from roster.launch import main

raise SystemExit(main())
