"""The flight recorder as the edge runs it: the facts an operation's Result carries (facts.py),
read in the order the core noted them, become the GroupEvents of that operation. The edge
(broker/groups.py) calls derive() once per applied result, before its records are written, so
the recorders see operations in the order the core decided them; the events then wait for the
records they describe (after_write.py). Pure: no I/O, no clock."""
from __future__ import annotations

from roster.observability import facts as f
from roster.observability.consumer_recorder import ConsumerRecorder
from roster.observability.events import CLASSIC
from roster.observability.recorder import ClassicRecorder


class FlightRecorder:
    def __init__(self) -> None:
        self.classic = ClassicRecorder()
        self.consumer = ConsumerRecorder()

    def derive(self, facts: list) -> list:
        """The GroupEvents these facts make (often none)."""
        out: list = []
        classic, consumer = self.classic, self.consumer
        for fact in facts:
            match fact:
                case f.RebalanceStarted():
                    classic.rebalance_started(fact, out)
                case f.AlsoRebalancing():
                    classic.also(fact)
                case f.GenerationFormed():
                    classic.generation_formed(fact, out)
                case f.GenerationStable():
                    classic.generation_stable(fact, out)
                case f.StaticMemberSaved():
                    classic.saved(fact, out)
                case f.EpochCause():
                    consumer.cause(fact.group_id, fact.trigger, fact.now)
                case f.ConsumerSaved():
                    consumer.saved(fact.group_id, fact.instance_id, fact.new_id, fact.old_id)
                case f.ConsumerObserved():
                    consumer.observe(fact.group_id, fact.group, fact.now, out)
                case f.OperationUndone():
                    consumer.forget_operation()
                case f.GroupDeleted(protocol=protocol) if protocol == CLASSIC:
                    classic.deleted(fact, out)
                case f.GroupDeleted():
                    consumer.deleted(fact.group_id, fact.generation, fact.now, out)
                case _:
                    raise TypeError(f"not a flight-recorder fact: {fact!r}")
        return out
