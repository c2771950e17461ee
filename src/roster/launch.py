"""The entry point of a roster process: the `roster` console script and `python -m roster`.

kio (the protocol codec) registers hypothesis strategies for its types whenever hypothesis is
importable, which made importing it the largest single cost of a broker's start (hypothesis is
installed with the test extra). A roster process never uses them; None in sys.modules makes
`import hypothesis` raise ImportError, which kio expects. Only here, before roster.cli (and so
kio) is imported, in a process's entry point: a test process that imports roster.cli keeps its
hypothesis.

The cyclic garbage collector is off while the command's modules are imported: importing builds
thousands of classes and functions that all live as long as the process, and collections
during the import find nothing to free (a few percent of a broker's start, docs/testing.md).
What they built is then frozen (gc.freeze) before the collector is turned back on: otherwise
the first allocation after it pays a collection walking every one of those objects, for a few
hundred KiB of garbage at most (12-25 ms of a broker's start on a shared 2-core machine). A
broker freezes what its start built in the same way (broker/network/server.py).
"""
import gc
import sys


def main() -> int:
    sys.modules.setdefault("hypothesis", None)
    gc.disable()
    try:
        from roster.cli import main as cli_main
        if "serve" in sys.argv[1:4]:   # `roster [--log-level L] serve ...`: the broker's too
            import roster.broker.network.server  # noqa: F401
    finally:
        gc.freeze()
        gc.enable()
    return cli_main()
