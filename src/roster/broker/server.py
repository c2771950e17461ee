"""Run a broker: listen, serve connections, stop cleanly on SIGTERM/SIGINT."""
from __future__ import annotations

import asyncio
import logging
import signal
from pathlib import Path

from roster.broker.broker import Broker
from roster.broker.connection import Connection
from roster.config import BrokerConfig

log = logging.getLogger("roster.server")


async def serve(config: BrokerConfig, data_dir: Path, host: str, port: int) -> None:
    """Serve until SIGTERM or SIGINT. Prints `roster listening on HOST:PORT` once accepting."""
    broker = Broker(config, data_dir)
    broker.start()
    connections: set[asyncio.Task] = set()

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        connections.add(task)
        try:
            await Connection(broker, reader, writer).serve()
        except asyncio.CancelledError:
            # Shutdown cancels connections on purpose (e.g. one parked in a Fetch long poll);
            # ending quietly keeps asyncio from logging the cancellation as an error.
            writer.close()
        finally:
            connections.discard(task)

    server = await asyncio.start_server(on_connect, host, port, reuse_address=True)
    bound_port = server.sockets[0].getsockname()[1]  # port 0 asks the OS for a free one
    broker.advertise(host, bound_port)

    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stopping.set)
    print(f"roster listening on {host}:{bound_port}", flush=True)
    try:
        await stopping.wait()
    finally:
        log.info("shutting down")
        server.close()
        for task in list(connections):
            task.cancel()
        await asyncio.gather(*connections, return_exceptions=True)
        await server.wait_closed()
        await broker.stop()
        log.info("stopped")


def raise_open_file_limit() -> None:
    """Every segment keeps files open and every client a socket: take what the system allows."""
    try:
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft < hard:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ImportError, ValueError, OSError) as exc:
        log.warning("cannot raise the open-file limit: %s", exc)


def run(config: BrokerConfig, data_dir: Path, host: str, port: int) -> None:
    raise_open_file_limit()
    try:
        import uvloop
        runner = uvloop.run
    except ImportError:  # uvloop is optional; stock asyncio serves the same protocol, slower
        runner = asyncio.run
    runner(serve(config, data_dir, host, port))
