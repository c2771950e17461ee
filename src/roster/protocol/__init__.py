"""The pure protocol layer: framing, headers, the kio-backed codec, error codes, the API registry.

Nothing in this package performs I/O or reads the clock.
"""
