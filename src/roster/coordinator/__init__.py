"""The pure group coordinator: plain synchronous Python, no I/O, no clock, no randomness.

Each operation takes the current time and a request and returns a Result (records to write,
replies to release, timers to set). The clock and the member-id generator are injected, so every
behaviour is reproducible in tests with a manual clock.
"""
