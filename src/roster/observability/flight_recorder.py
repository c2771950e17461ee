"""The flight recorder as the edge runs it: the facts an operation's Result carries (facts.py),
read in the order the core noted them, become the GroupEvents of that operation. The edge
(broker/groups/runtime.py) calls derive() once per applied result, before its records are written, so
the recorders see operations in the order the core decided them; the events then wait for the
records they describe (after_write.py). Pure: no I/O, no clock."""
from __future__ import annotations

from roster.coordinator import facts as f


class FlightRecorder:
    """One recorder per group type, each reading the facts its type notes (`facts`); a fact
    two types share (GroupDeleted) goes to the recorder of the type it names. Every type's
    recorder comes with its registration (GroupTypeRegistration.recorder), the built-in ones'
    too (roster/group_types.py); a fact two recorders read goes to the one registered first."""

    def __init__(self, recorders: tuple = ()) -> None:
        self.recorders = {r.name: r for r in recorders}
        self._by_fact: dict[type, object] = {}
        for recorder in reversed(tuple(self.recorders.values())):
            for fact_type in recorder.facts:
                self._by_fact[fact_type] = recorder

    def derive(self, facts: list) -> list:
        """The GroupEvents these facts make (often none)."""
        out: list = []
        by_fact, recorders = self._by_fact, self.recorders
        for fact in facts:
            if type(fact) is f.GroupDeleted:
                recorder = recorders.get(fact.protocol)
            else:
                recorder = by_fact.get(type(fact))
            if recorder is None:
                raise TypeError(f"not a flight-recorder fact: {fact!r}")
            recorder.take(fact, out)
        return out
