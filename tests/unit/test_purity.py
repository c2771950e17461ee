"""The pure packages import nothing that performs I/O or reads the clock (DESIGN principle 2)."""
import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "roster"
FORBIDDEN = {"asyncio", "socket", "time", "uuid", "random", "os", "threading", "selectors"}


@pytest.mark.parametrize("package", ["coordinator", "protocol"])
def test_pure_packages_import_no_io(package):
    offenders = []
    for path in sorted((SRC / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            offenders += [f"{path.name}: {n}" for n in names if n.split(".")[0] in FORBIDDEN]
    assert not offenders, offenders
