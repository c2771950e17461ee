"""`roster users` offline: the way a fresh broker gets its first users."""
from __future__ import annotations

from roster.cli import main


def test_add_list_delete_offline(tmp_path, capsys):
    password = tmp_path / "password"
    password.write_text("sekrit-4711\n")
    data = str(tmp_path / "data")
    assert main(["users", "add", "alice", "--mechanism", "SCRAM-SHA-512", "--password-file",
                 str(password), "--data-dir", data]) == 0
    assert main(["users", "--data-dir", data, "add", "bob", "--password-file",
                 str(password), "--iterations", "8192"]) == 0
    assert main(["users", "list", "--data-dir", data]) == 0
    assert main(["users", "delete", "alice", "--data-dir", data]) == 0
    assert main(["users", "delete", "alice", "--data-dir", data]) == 1
    assert main(["users", "list", "--data-dir", data]) == 0
    out, err = capsys.readouterr()
    assert "alice\tSCRAM-SHA-512(iterations=4096)\nbob\tSCRAM-SHA-256(iterations=8192)" in out
    assert out.rstrip().endswith("bob\tSCRAM-SHA-256(iterations=8192)")
    assert "user alice has no SCRAM credential" in err
    assert "sekrit" not in out + err
    assert "sekrit" not in (tmp_path / "data" / "scram-credentials.json").read_text()


def test_refusals_offline(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.write_text("")
    data = str(tmp_path / "data")
    assert main(["users", "add", "x", "--password-file", str(empty), "--data-dir", data]) == 1
    assert main(["users", "add", "x", "--password-file", str(tmp_path / "missing"),
                 "--data-dir", data]) == 1
    password = tmp_path / "password"
    password.write_text("p")
    assert main(["users", "add", "x", "--password-file", str(password), "--iterations", "10",
                 "--data-dir", data]) == 1
    _, err = capsys.readouterr()
    assert "is empty" in err and "cannot read the password file" in err and "iterations" in err
