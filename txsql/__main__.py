from txsql.cli import main

raise SystemExit(main())
