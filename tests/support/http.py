"""A GET as a browser sends it, with HTTP Basic credentials when a user is given: for the tests of
the consoles' listeners."""
from __future__ import annotations

import base64
import urllib.error
import urllib.request


def http_get(url: str, user: str | None = None, password: str | None = None,
             timeout_s: float = 10) -> tuple[int, dict[str, str], str]:
    """(status, headers, body); an error status is an answer here, not an exception."""
    request = urllib.request.Request(url)
    if user is not None:
        token = base64.b64encode(f"{user}:{password}".encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as answer:
            return answer.status, dict(answer.headers), answer.read().decode()
    except urllib.error.HTTPError as refused:
        return refused.code, dict(refused.headers), refused.read().decode()
