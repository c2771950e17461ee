"""The group console in a real browser (Debian's chromium, headless): the page is not blank,
and its DOM shows one generation dot per recorded generation, the members and the lag.
Skips, saying why, only where chromium is not installed (scripts/ensure-system-deps.sh
installs it)."""
from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass, field

import pytest

from roster.admin.client import AdminClient
from roster.observability import events as ev
from roster.observability import history
from tests.support import groups
from tests.support.groups import ConfluentMember, Watch
from tests.support.needs import missing
from tests.support.ports import free_port

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("console-browser")]

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def chromium(url: str, tmp_path, *args: str) -> subprocess.CompletedProcess:
    if CHROMIUM is None:
        missing("chromium is not installed (apt-get install chromium; "
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


def wait_event(client, group: str, found, what: str) -> None:
    """Follow the group's recorded events until one satisfies found(event)."""
    for event in history.events(client, group, follow=True, wait_ms=300, timeout_s=20):
        if found(event):
            return
    raise AssertionError(f"no event of group {group}: {what}")


@dataclass
class Console:
    url: str
    group: str
    recorded: list      # the main group's generations
    lone: str           # one static member, restarted in time: one generation, one saved
    expired: str        # one static member whose session expired: the group went Empty
    doms: dict = field(default_factory=dict)

    def dom(self, path: str, tmp_path) -> str:
        """The page's DOM as chromium built it, loaded once for every test that reads it."""
        if path not in self.doms:
            self.doms[path] = chromium(self.url + path, tmp_path, "--dump-dom").stdout
        return self.doms[path]


@pytest.fixture(scope="module")
def console(tmp_path_factory):
    """A broker with its console on, and three groups. The main one went through a few
    rebalances: three dynamic members, one bounced, and one static member bounced (a saved
    rebalance). "lone" has one generation and a saved rebalance; in "expired" a static
    member stopped and its session expired, so the group went Empty."""
    from tests.support.process import BrokerProcess
    port = free_port()   # the listener serves before the broker says it listens
    broker = BrokerProcess(tmp_path_factory.mktemp("console"), {
        "group.initial.rebalance.delay.ms": "0", "group.min.session.timeout.ms": "1000",
        "http.port": str(port)}).start()
    url = f"http://127.0.0.1:{port}/"
    group, lone, expired = "orders-enricher", "lone", "expired"
    for topic, partitions in ((group, 6), (lone, 2), (expired, 3)):
        groups.create_topic(broker.bootstrap, topic, partitions)
    watch = Watch()
    conf = {"heartbeat.interval.ms": 300, "session.timeout.ms": 6000}
    members = [ConfluentMember(watch, broker.bootstrap, group, group, f"w-{i}",
                               f"worker-{i}" if i == 2 else None, conf) for i in range(3)]
    others = [ConfluentMember(watch, broker.bootstrap, lone, lone, "lone-a", "lone-0", conf),
              ConfluentMember(watch, broker.bootstrap, expired, expired, "exp-a", "exp-0",
                              {"heartbeat.interval.ms": 200, "session.timeout.ms": 1000})]
    try:
        for m in members + others:
            m.start()
        groups.wait_split(watch, members, 6)
        groups.wait_split(watch, others[:1], 2)
        groups.wait_split(watch, others[1:], 3)
        members[0].stop()
        watch.wait_for(lambda: groups.split_evenly(members[1:], 6), groups.DEADLINE_S,
                       lambda: "the others took over")
        members[0] = ConfluentMember(watch, broker.bootstrap, group, group, "w-0b", None,
                                     conf).start()
        groups.wait_split(watch, members, 6)
        members[2].stop()                       # static: no LeaveGroup
        members[2] = ConfluentMember(watch, broker.bootstrap, group, group, "w-2b",
                                     "worker-2", conf).start()
        others[0].stop()
        others[0] = ConfluentMember(watch, broker.bootstrap, lone, lone, "lone-b", "lone-0",
                                    conf).start()
        others[1].stop()                        # static: its session expires in 1 s
        watch.wait_for(lambda: members[2].count("assign") >= 1
                       and others[0].count("assign") >= 1, groups.DEADLINE_S,
                       lambda: "worker-2 and lone-0 back")
        with AdminClient(broker.bootstrap) as client:
            for name in (group, lone):
                wait_event(client, name, lambda e: e.kind == ev.SAVED, "saved")
            wait_event(client, expired, lambda e: e.kind == ev.GENERATION
                       and e.members_after == (), "the group went Empty")
            recorded = [e for e in history.events(client, group) if e.kind == ev.GENERATION]
        yield Console(url, group, recorded, lone, expired)
    finally:
        groups.stop_all(members + others)
        broker.stop()


def plot_svg(dom: str, name: str) -> str:
    start = dom.index(f'data-plot="{name}"')
    return dom[start:dom.index("</svg>", start)]


def x_axis(svg: str) -> list[tuple[str, str]]:
    """(x, label) of each time tick of a plot."""
    return re.findall(r'<line class="tick" x1="([0-9.]+)"[^>]*>(?:</line>)?'
                      r'<text x="[0-9.]+"[^>]*>([^<]+)</text>', svg)


def test_group_page_in_chromium_shows_every_generation(console, tmp_path):
    page = console.url + f"group/{console.group}"
    recorded = console.recorded
    dom = console.dom(f"group/{console.group}", tmp_path)
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


def test_generation_axis_counts_in_whole_even_steps(console, tmp_path):
    """Generations 1..4 read 1, 2, 3, 4 up the axis, evenly spaced (not 1, 2, 4)."""
    svg = plot_svg(console.dom(f"group/{console.group}", tmp_path), "generations")
    ticks = [(int(v), float(y)) for y, v in
             re.findall(r'class="ytick" x="[0-9.]+" y="([0-9.]+)"[^>]*>(\d+)<', svg)]
    values = [v for v, _ in ticks]
    generations = sorted(e.generation for e in console.recorded)
    assert values[0] <= generations[0] and values[-1] >= generations[-1], ticks
    steps = {b - a for a, b in zip(values, values[1:])}
    gaps = [y0 - y1 for (_, y0), (_, y1) in zip(ticks, ticks[1:])]
    assert len(steps) == 1 and max(gaps) - min(gaps) < 0.2, ticks


def test_both_plots_share_one_time_axis(console, tmp_path):
    dom = console.dom(f"group/{console.group}", tmp_path)
    generations, ownership = x_axis(plot_svg(dom, "generations")), \
        x_axis(plot_svg(dom, "ownership"))
    assert len(generations) >= 3 and generations == ownership, (generations, ownership)


def test_saved_rebalance_sits_at_the_generation_it_kept(console, tmp_path):
    """One generation and a saved rebalance: the diamond is at that generation's height,
    not on the time axis."""
    page = console.url + f"group/{console.lone}"
    png = screenshot(page, tmp_path / "lone.png", tmp_path, "1280,900")
    assert distinct_colours(png) > 20
    svg = plot_svg(console.dom(f"group/{console.lone}", tmp_path), "generations")
    dots = re.findall(r'data-generation="(\d+)">.*?<circle cx="[0-9.]+" cy="([0-9.]+)"', svg)
    diamonds = re.findall(r'class="saved" data-generation="(\d+)">.*?<path d="M[0-9.]+ '
                          r'([0-9.]+)', svg)
    assert len(dots) == 1 and len(diamonds) == 1, svg
    assert diamonds[0][0] == dots[0][0]
    assert abs(float(diamonds[0][1]) + 7 - float(dots[0][1])) < 0.2, (dots, diamonds)


def test_owner_whose_session_expired_owns_nothing_after(console, tmp_path):
    """The member's partitions are drawn as its own until its session expired, then as
    having no owner: the group is Empty."""
    page = console.url + f"group/{console.expired}"
    screenshot(page, tmp_path / "expired.png", tmp_path, "1280,1000")
    svg = plot_svg(console.dom(f"group/{console.expired}", tmp_path), "ownership")
    rows = re.findall(r'<text x="[0-9.]+" y="([0-9.]+)"[^>]*><title>', svg)
    assert len(rows) == 3, svg
    rects = re.findall(r'<rect class="(owned|unowned)" data-owner="([^"]*)" x="([0-9.]+)" '
                       r'y="([0-9.]+)" width="([0-9.]+)"', svg)
    for y in {r[3] for r in rects}:
        row = sorted((r for r in rects if r[3] == y), key=lambda r: float(r[2]))
        assert [r[0] for r in row] == ["owned", "unowned"], row
        owned, unowned = row
        assert owned[1] == "exp-0"
        assert abs(float(owned[2]) + float(owned[4]) - float(unowned[2])) < 0.2


def test_index_in_chromium_lists_the_group(console, tmp_path):
    dom = console.dom("", tmp_path)
    assert f'href="/group/{console.group}"' in dom and 'data-count="groups">3<' in dom
    png = screenshot(console.url, tmp_path / "index.png", tmp_path, "1280,900")
    assert distinct_colours(png) > 10, "the page looks blank"
