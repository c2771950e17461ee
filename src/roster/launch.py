"""The entry point of a roster process: the `roster` console script and `python -m roster`.

kio (the protocol codec) registers hypothesis strategies for its types whenever hypothesis is
importable, which made importing it the largest single cost of a broker's start (hypothesis is
installed with the test extra). A roster process never uses them; None in sys.modules makes
`import hypothesis` raise ImportError, which kio expects. Only here, before roster.cli (and so
kio) is imported, in a process's entry point: a test process that imports roster.cli keeps its
hypothesis.
"""
import sys


def main() -> int:
    sys.modules.setdefault("hypothesis", None)
    from roster.cli import main as cli_main
    return cli_main()
