"""Partition logs: the contract (api), the batch-header codec (batch), and two implementations,
FileLog (file, durable) and MemoryLog (memory, for tests)."""
