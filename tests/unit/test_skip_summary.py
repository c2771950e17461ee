"""Every run ends with the list of what it skipped and why: pytest's -r flags in pyproject.toml
must take in skips ('s', or 'a'/'A' for all), so a skip never passes unseen in a green run."""
import shlex
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def test_the_closing_summary_lists_skips_with_their_reasons():
    addopts = tomllib.loads(PYPROJECT.read_text())["tool"]["pytest"]["ini_options"]["addopts"]
    words = shlex.split(addopts)
    report = [w[2:] for w in words if w.startswith("-r") and len(w) > 2]
    report += [words[i + 1] for i, w in enumerate(words[:-1]) if w == "-r"]
    assert any(set(chars) & set("saA") for chars in report), addopts
    assert "N" not in "".join(report), addopts   # -rN: no summary at all
