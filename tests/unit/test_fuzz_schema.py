"""The fuzzer's own request writer (fuzz/schema.py) must write exactly what kio reads: every
(API, version) the broker advertises, generated with plausible values, decodes, and kio's own
encoding of what it decoded decodes to the same request."""
from __future__ import annotations

import random
import struct
import uuid

import pytest

from fuzz.generate import Generator, World, advertised_versions
from fuzz.mutate import Mutator
from fuzz.schema import read_uvarint
from roster.protocol.codec import decode_request, encode_request, request_schema

WORLD = World({"fuzzed": (uuid.UUID(int=7), 2), "fuzzed-2": (uuid.UUID(int=8), 1)})
VERSIONS = [(key, name, v) for key, name, v in advertised_versions()
            if request_schema(key, v) is not None]


@pytest.mark.parametrize("key,name,version", VERSIONS,
                         ids=[f"{name}-v{v}" for _, name, v in VERSIONS])
def test_generated_requests_decode_with_kio(key, name, version):
    for seed in range(4):
        frame, spans, _ = Generator(random.Random(seed), WORLD).request(key, version)
        request = decode_request(frame)
        again = encode_request(key, version, request.correlation_id, request.client_id,
                               request.body)[4:]
        assert decode_request(again).body == request.body
        for span in spans:  # every recorded count and length is where the walker says
            if span.kind == "count" and not span.flexible:
                count = struct.unpack_from(">i", frame, span.start)[0]
                assert count >= -1 and span.end == span.start + 4
            elif span.kind in ("count", "strlen", "byteslen", "tags") and span.flexible:
                _, end = read_uvarint(frame, span.start)
                assert end == span.end


def test_every_mutation_family_applies():
    rng = random.Random(5)
    mutator = Mutator(rng)
    advertised = {key: (0, 20) for key, _, _ in VERSIONS}
    seen = set()
    gen = Generator(rng, WORLD)
    for _ in range(400):
        key, _, version = rng.choice(VERSIONS)
        frame, spans, _ = gen.request(key, version)
        mutated, what = mutator.mutate(frame, spans, advertised)
        assert isinstance(mutated, bytes)
        seen.add(what.split()[0])
    assert {"huge", "null", "length", "unknown", "truncated", "header", "int"} <= seen
