"""The API registry: each handler module declares the versions it serves, and ApiVersions is
generated from these declarations so the advertised ranges can never drift from the code."""
from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

# handler(broker, request, connection) -> response body, or None when no response is sent
Handler = Callable[..., Awaitable[Any]]
# legacy(frame, prefix) -> encoded response frame, for advertised versions kio has no schema for
LegacyAnswer = Callable[..., bytes]
# raw(broker, frame, prefix, connection) -> the encoded response frame, or a coroutine for it
# when the answer has to wait: a handler with its own codec, run without a coroutine of its own
RawHandler = Callable[..., bytes | Awaitable[bytes]]


@dataclass(frozen=True, slots=True)
class ApiSpec:
    key: int
    name: str
    min_version: int   # advertised minimum
    max_version: int   # advertised maximum
    handler: Handler | None
    # Versions in [min_version, decoded_from) are advertised only so that clients' feature checks
    # pass (librdkafka's, see DESIGN.md); they are answered by `legacy` without a kio decode.
    decoded_from: int | None = None
    legacy: LegacyAnswer | None = None
    # Set instead of `handler` for the hottest APIs, which decode and encode by hand (kio's
    # generic path would cost them more than their own work).
    raw: RawHandler | None = None

    def supports(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version

    def is_legacy(self, version: int) -> bool:
        return self.decoded_from is not None and version < self.decoded_from


class Registry:
    def __init__(self) -> None:
        self._specs: dict[int, ApiSpec] = {}

    def add(self, spec: ApiSpec) -> ApiSpec:
        if spec.key in self._specs:
            raise ValueError(f"api key {spec.key} registered twice")
        if spec.min_version > spec.max_version:
            raise ValueError(f"{spec.name}: empty version range")
        self._specs[spec.key] = spec
        return spec

    def get(self, api_key: int) -> ApiSpec | None:
        return self._specs.get(api_key)

    def __iter__(self) -> Iterator[ApiSpec]:
        return iter(sorted(self._specs.values(), key=lambda s: s.key))

    def version_ranges(self) -> list[tuple[int, int, int]]:
        return [(s.key, s.min_version, s.max_version) for s in self]
