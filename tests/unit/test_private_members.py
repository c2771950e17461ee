"""No module reads another's private members (names with one leading underscore): what a module
may use of another is what that one makes public. A module may use its own private names, on
any object: those it defines (functions, classes, module names) and the attributes its own
classes set on `self` or list in __slots__. Anything else read as `x._name`, through
getattr/setattr/hasattr with a "_name", or imported as `from m import _name` fails this test.
(An object's private attribute set by a module that does not own it is caught too: a write is
as much a reach inside as a read.)"""
import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "roster"
# public by convention despite the underscore: namedtuple's methods (the underscore keeps them
# clear of field names)
PUBLIC = {"_replace", "_asdict", "_fields", "_make", "_field_defaults"}


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__") and name not in PUBLIC


def _is_self(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        return node.id in ("self", "cls")
    # super()._x and type(self)._x are the object's own class speaking
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
        node.func.id in ("super", "type")


def _owned(tree: ast.Module) -> set[str]:
    owned = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            owned.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            owned.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) \
                and _is_self(node.value):
            owned.add(node.attr)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            owned.add(node.target.id)
        elif isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__slots__" for t in node.targets):
            owned.update(c.value for c in ast.walk(node.value)
                         if isinstance(c, ast.Constant) and isinstance(c.value, str))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            owned.update((a.asname or a.name).split(".")[0] for a in node.names
                         if a.asname is not None)
    return {name for name in owned if _private(name)}


def reaches(path: Path) -> list[str]:
    """Where the module at `path` uses a private name it does not own."""
    tree = ast.parse(path.read_text())
    owned = _owned(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr) \
                and not _is_self(node.value) and node.attr not in owned:
            found.append(f"{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.ImportFrom):
            found += [f"{node.lineno}: from {node.module} import {a.name}"
                      for a in node.names if _private(a.name)]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in ("getattr", "setattr", "hasattr", "delattr") \
                and len(node.args) > 1 and isinstance(node.args[1], ast.Constant) \
                and isinstance(node.args[1].value, str) and _private(node.args[1].value) \
                and node.args[1].value not in owned:
            found.append(f"{node.lineno}: {ast.unparse(node)}")
    return sorted(found, key=lambda line: int(line.split(":")[0]))


def test_no_module_reads_another_modules_private_members():
    offenders = {str(path.relative_to(SRC)): found for path in sorted(SRC.rglob("*.py"))
                 if (found := reaches(path))}
    assert not offenders, offenders


def test_the_check_sees_a_reach_inside(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("from other import _hidden\n"
                      "class Mine:\n"
                      "    def __init__(self):\n"
                      "        self._own = 1\n"
                      "def f(x, conn):\n"
                      "    x._own, conn._transport\n"
                      "    return getattr(conn, '_closed', False)\n")
    assert reaches(module) == ["1: from other import _hidden", "6: conn._transport",
                               "7: getattr(conn, '_closed', False)"]
