from topolint.cli import main

raise SystemExit(main())
