"""The network edge: listening, connections and their frames, and admission (what every
request passes before its handler)."""
