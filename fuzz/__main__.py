"""python -m fuzz live|replay|atheris|all — see fuzz/README.md."""
from fuzz.cli import main

raise SystemExit(main())
