import sys

# kio (the protocol codec) registers hypothesis strategies for its types whenever hypothesis is
# importable, which made importing it the largest single cost of a broker's start (hypothesis is
# installed with the test extra). A roster process never uses them; None in sys.modules makes
# `import hypothesis` raise ImportError, which kio expects. Only here, in a process's entry
# point: a test process that imports roster.cli keeps its hypothesis.
sys.modules.setdefault("hypothesis", None)

from roster.cli import main  # noqa: E402

raise SystemExit(main())
