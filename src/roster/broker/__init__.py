"""The asyncio edge: sockets, connections, handlers, durability and timers around the pure core."""
