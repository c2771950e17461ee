"""docs/security.md and docs/configuration.md cover every security setting roster reads."""
from __future__ import annotations

from pathlib import Path

import pytest

from roster.security.settings import SECURITY_SETTINGS

DOCS = Path(__file__).resolve().parents[3] / "docs"


@pytest.mark.parametrize("page", ["security.md", "configuration.md"])
def test_every_security_setting_is_documented(page):
    text = (DOCS / page).read_text()
    missing = [key for key in SECURITY_SETTINGS if f"`{key}`" not in text]
    assert not missing, f"{page} does not mention {missing}"
