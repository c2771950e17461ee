"""Listeners as Kafka names them: `listeners`, `advertised.listeners` and
`listener.security.protocol.map`.

    listeners=PLAINTEXT://127.0.0.1:9092,SASL_SSL://0.0.0.0:9093
    listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL,INTERNAL:SSL

A listener's name is what `listener.name.<name>.*` settings use (in lower case); its security
protocol comes from the map (a name that is itself a protocol maps to itself when the map does
not say otherwise). Without `listeners`, roster listens on `--host`/`--port` with PLAINTEXT,
as before.
"""
from __future__ import annotations


from roster.frozen import frozen
from roster.security.settings import PROTOCOLS, SecuritySettings


@frozen
class Listener:
    name: str            # upper case, as in `listeners`
    protocol: str        # PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL
    host: str            # to bind ("" and 0.0.0.0 bind every IPv4 address)
    port: int            # 0: any free port (the bound one is advertised)
    advertised_host: str | None = None
    advertised_port: int | None = None

    @property
    def uses_tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.protocol in ("SASL_PLAINTEXT", "SASL_SSL")


def _split_address(item: str, key: str) -> tuple[str, str, int]:
    name, sep, address = item.strip().partition("://")
    if not sep or not name:
        raise ValueError(f"{key}: {item!r} is not NAME://host:port")
    host, colon, port_text = address.rpartition(":")
    if not colon:
        raise ValueError(f"{key}: {item!r} has no port")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]  # [::1]
    try:
        port = int(port_text)
    except ValueError:
        raise ValueError(f"{key}: {item!r}: port {port_text!r} is not a number") from None
    if not 0 <= port <= 65535:
        raise ValueError(f"{key}: {item!r}: port out of range")
    return name.strip().upper(), host, port


def parse_protocol_map(text: str) -> dict[str, str]:
    mapping = {}
    for item in text.split(","):
        if not item.strip():
            continue
        name, sep, protocol = item.partition(":")
        protocol = protocol.strip().upper()
        if not sep or protocol not in PROTOCOLS:
            raise ValueError(f"listener.security.protocol.map: {item.strip()!r} is not "
                             f"NAME:PROTOCOL with PROTOCOL one of {', '.join(PROTOCOLS)}")
        mapping[name.strip().upper()] = protocol
    return mapping


def parse_listeners(settings: SecuritySettings, advertised: str, host: str,
                    port: int) -> list[Listener]:
    """The listeners to open, in the order given (the first is the one `roster listening on`
    names). `advertised` is advertised.listeners; `host`/`port` are serve's --host/--port,
    used when `listeners` is not set."""
    protocols = parse_protocol_map(settings["listener.security.protocol.map"])
    text = settings["listeners"]
    if not text.strip():
        entries = [("PLAINTEXT", host, port)]
    else:
        entries = [_split_address(item, "listeners") for item in text.split(",") if item.strip()]
    names = [name for name, _, _ in entries]
    if len(set(names)) != len(names):
        raise ValueError(f"listeners: a listener name appears twice in {text!r}")
    ports = [p for _, _, p in entries if p]
    if len(set(ports)) != len(ports):
        raise ValueError(f"listeners: two listeners on one port in {text!r}")
    advertised_by_name: dict[str, tuple[str, int]] = {}
    for item in advertised.split(","):
        if item.strip():
            name, a_host, a_port = _split_address(item, "advertised.listeners")
            if name not in names:
                raise ValueError(f"advertised.listeners: {name} is not in listeners")
            advertised_by_name[name] = (a_host, a_port)
    listeners = []
    for name, l_host, l_port in entries:
        protocol = protocols.get(name)
        if protocol is None:
            if name in PROTOCOLS:
                protocol = name
            else:
                raise ValueError(f"listener {name} has no security protocol: add "
                                 f"{name}:PROTOCOL to listener.security.protocol.map")
        a_host, a_port = advertised_by_name.get(name, (None, None))
        listeners.append(Listener(name, protocol, l_host, l_port, a_host, a_port))
    return listeners


def advertised_address(listener: Listener, bound_port: int) -> tuple[str, int]:
    """What Metadata and FindCoordinator tell a client that came in on this listener."""
    if listener.advertised_host is not None:
        return listener.advertised_host, listener.advertised_port
    host = listener.host
    if host in ("", "0.0.0.0", "::"):
        host = "localhost"
    return host, bound_port
