"""The group console in a real browser (Debian's chromium, headless): the page is not blank,
and its DOM shows one generation dot per recorded generation, the members and the lag.
Skips, saying why, only where chromium is not installed (scripts/ensure-system-deps.sh
installs it)."""
from __future__ import annotations

import re
import shutil
import socket
import subprocess

import pytest

from roster.admin.client import AdminClient
from roster.observability import events as ev
from roster.observability import history
from tests.support import groups
from tests.support.groups import ConfluentMember, Watch

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("console-browser")]

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def chromium(url: str, tmp_path, *args: str) -> subprocess.CompletedProcess:
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (apt-get install chromium; "
                    "scripts/ensure-system-deps.sh does it)")
    profile = tmp_path / f"profile-{len(list(tmp_path.iterdir()))}"
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--hide-scrollbars", f"--user-data-dir={profile}", *args, url],
        capture_output=True, text=True, timeout=90, check=True)


def screenshot(url: str, path, tmp_path, size="1280,1600") -> bytes:
    chromium(url, tmp_path, f"--screenshot={path}", f"--window-size={size}")
    return path.read_bytes()


def distinct_colours(png: bytes) -> int:
    """How many different colours a PNG has (a blank page has one or two): decoded with the
    standard library only (zlib), for 8-bit RGB/RGBA images as chromium writes them."""
    import struct
    import zlib
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    while pos < len(png):
        length, kind = struct.unpack(">I4s", png[pos:pos + 8])
        data = png[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour_type = struct.unpack(">IIBB", data[:10])
            channels = {2: 3, 6: 4}[colour_type]
        elif kind == b"IDAT":
            idat += data
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels
    seen, prev = set(), bytearray(stride)
    for row in range(height):
        start = row * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = prev[i]
            upleft = prev[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 255
            elif kind == 2:
                line[i] = (line[i] + up) & 255
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - upleft
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - upleft)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else
                                      up if pb <= pc else upleft)) & 255
        if row % 4 == 0:
            for i in range(0, stride, channels * 4):
                seen.add(bytes(line[i:i + 3]))
        prev = line
    return len(seen)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def console(tmp_path_factory):
    """A broker with its console on, and a group that went through a few rebalances: three
    dynamic members, one bounced, and one static member bounced (a saved rebalance)."""
    from tests.support.process import BrokerProcess
    port = free_port()   # the listener serves before the broker says it listens
    broker = BrokerProcess(tmp_path_factory.mktemp("console"), {
        "group.initial.rebalance.delay.ms": "0", "http.port": str(port)}).start()
    url = f"http://127.0.0.1:{port}/"
    group = "orders-enricher"
    groups.create_topic(broker.bootstrap, group, 6)
    watch = Watch()
    conf = {"heartbeat.interval.ms": 300, "session.timeout.ms": 6000}
    members = [ConfluentMember(watch, broker.bootstrap, group, group, f"w-{i}",
                               f"worker-{i}" if i == 2 else None, conf) for i in range(3)]
    try:
        for m in members:
            m.start()
        groups.wait_split(watch, members, 6)
        members[0].stop()
        watch.wait_for(lambda: groups.split_evenly(members[1:], 6), groups.DEADLINE_S,
                       lambda: "the others took over")
        members[0] = ConfluentMember(watch, broker.bootstrap, group, group, "w-0b", None,
                                     conf).start()
        groups.wait_split(watch, members, 6)
        members[2].stop()                       # static: no LeaveGroup
        members[2] = ConfluentMember(watch, broker.bootstrap, group, group, "w-2b",
                                     "worker-2", conf).start()
        watch.wait_for(lambda: members[2].count("assign") >= 1, groups.DEADLINE_S,
                       lambda: "worker-2 back")
        with AdminClient(broker.bootstrap) as client:
            for event in history.events(client, group, follow=True, wait_ms=500,
                                        timeout_s=20):
                if event.kind == ev.SAVED:
                    break
            recorded = [e for e in history.events(client, group) if e.kind == ev.GENERATION]
        yield url, group, recorded
    finally:
        groups.stop_all(members)
        broker.stop()


def test_group_page_in_chromium_shows_every_generation(console, tmp_path):
    url, group, recorded = console
    page = url + f"group/{group}"
    dom = chromium(page, tmp_path, "--dump-dom").stdout
    dots = re.findall(r'class="generation" data-generation="(\d+)"', dom)
    assert len(dots) == len(recorded) >= 3, (dots, [e.generation for e in recorded])
    assert sorted(int(d) for d in dots) == sorted(e.generation for e in recorded)
    assert dom.count('class="member"') == 3
    assert dom.count('class="lag"') == 6 or "No committed offsets" in dom
    assert 'data-count="saved">1<' in dom
    assert 'data-plot="ownership"' in dom and dom.count('class="owned"') >= 6
    shot = tmp_path / "group.png"
    png = screenshot(page, shot, tmp_path)
    assert len(png) > 20_000 and distinct_colours(png) > 20, "the page looks blank"


def test_index_in_chromium_lists_the_group(console, tmp_path):
    url, group, _ = console
    dom = chromium(url, tmp_path, "--dump-dom").stdout
    assert f'href="/group/{group}"' in dom and 'data-count="groups">1<' in dom
    png = screenshot(url, tmp_path / "index.png", tmp_path, "1280,900")
    assert distinct_colours(png) > 10, "the page looks blank"
