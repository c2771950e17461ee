"""roster migrate's --users-file: both forms, every refusal naming the line and never its
content, and passwords that never show in a repr."""
from __future__ import annotations

import os

import pytest

from roster.admin import users_file


def _write(tmp_path, text: str, mode: int = 0o600):
    path = tmp_path / "users"
    path.write_text(text)
    os.chmod(path, mode)
    return str(path)


def test_lines_keep_everything_after_the_first_equals_sign(tmp_path):
    passwords = users_file.read(_write(tmp_path, "# who\n\nalice=a=b c \n  bob = x\n"))
    assert passwords.get("alice") == "a=b c "
    assert passwords.get("bob") == " x"
    assert passwords.get("carol") is None
    assert passwords.users() == ["alice", "bob"]


def test_json_object(tmp_path):
    passwords = users_file.read(_write(tmp_path, '{"al=ice": "s3cret"}'))
    assert passwords.get("al=ice") == "s3cret"


def test_a_byte_order_mark_is_not_part_of_the_first_name(tmp_path):
    path = tmp_path / "users"
    path.write_bytes("\ufeffalice=hunter2\n".encode())
    assert users_file.read(str(path)).users() == ["alice"]


def test_the_passwords_never_show_in_a_repr(tmp_path):
    passwords = users_file.read(_write(tmp_path, "alice=hunter2\n"))
    assert "hunter2" not in repr(passwords) and "hunter2" not in str(passwords)
    assert "alice" in repr(passwords)


@pytest.mark.parametrize("text, complaint", [
    ("alice\n", "line 1: expected user=password"),
    ("=hunter2\n", "line 1: expected user=password"),
    ("# c\nalice=\n", "line 2: user alice has an empty password"),
    ("alice=hunter2\nalice=hunter3\n", "line 2: user alice is given twice"),
    ("# nobody\n", "names no user"),
    ('{"alice": "hunter2",', "is not valid JSON (line 1, column"),
    ('["alice", "hunter2"]', "expected one JSON object"),
    ('{"alice": ""}', "the password of user alice is not a non-empty string"),
    ('{"alice": 7}', "the password of user alice is not a non-empty string"),
    ('{"alice": "hunter2", "alice": "hunter3"}', "user alice is given twice"),
])
def test_a_bad_file_is_refused_by_line_without_its_content(tmp_path, text, complaint):
    path = _write(tmp_path, text)
    with pytest.raises(users_file.UsersFileError) as caught:
        users_file.read(path)
    assert complaint in str(caught.value)
    assert str(caught.value).startswith(f"the users file {path}")
    assert "hunter" not in str(caught.value)


def test_an_unreadable_file(tmp_path):
    with pytest.raises(users_file.UsersFileError, match="cannot read the users file .*: No "
                       "such file"):
        users_file.read(str(tmp_path / "absent"))


def test_world_readable(tmp_path):
    assert users_file.world_readable(_write(tmp_path, "a=b\n", 0o644))
    assert not users_file.world_readable(_write(tmp_path, "a=b\n", 0o640))
