from mqoe.cli.main import main

raise SystemExit(main())
