"""Share groups (KIP-932) at the edge: the registration of the share group type
(coordinator/share/), its group configs (share_configs.py), its view for `roster groups
describe` (admin/share_view.py), and the effects it asks of the broker's share-partition state
(`broker.share_state`, broker/share/state.py) once a result's records are durable:
- `ShareStateWanted`: initialise the share state of partitions entering the group's target
  assignment (`share_state.initialize(group_id, [(topic uuid, partition), ...])`, idempotent);
- `ShareGroupGone`: DeleteGroups took the group (`share_state.group_deleted(group_id)`).

A heartbeat that assigns partitions is answered only once their initialisation is done
(`initialized`, awaited by broker/handlers/share_group_heartbeat.py), so no consumer fetches a
partition whose share state does not exist yet: an initialisation that returns an awaitable
(it writes to __share_group_state) is kept here until it completes. The runtime carries out a
result's effects after its records are durable and before any continuation answers the
request, and at once when the result writes nothing.
"""
from __future__ import annotations

import asyncio
import inspect
import logging
import uuid
import weakref

from roster.admin.share_view import SHARE_VIEW
from roster.broker.groups.share_configs import SHARE_CONFIGS
from roster.coordinator.group_type import GroupTypeRegistration, OnFirstUse, TypeContext
from roster.coordinator.share.effects import ShareGroupGone, ShareStateWanted

log = logging.getLogger("roster.groups")

# broker -> {group id: the initialisations still running}
_initializing: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _make(context: TypeContext):
    from roster.coordinator.share.coordinator import ShareCoordinator
    return ShareCoordinator(context.settings_of("share"), topics=context.topics)


def _settings(config, group_configs):
    """The group.share.* membership settings (roster/config.py validated them) and the groups'
    own share.* configs, the live mapping group_configs.py keeps."""
    from roster.coordinator.share.messages import ShareConfig
    return ShareConfig.from_broker(config, group_configs)


def _state(broker, what: str):
    state = getattr(broker, "share_state", None)
    if state is None:
        log.warning("share groups: no share-partition state on this broker to %s", what)
    return state


def _call(broker, group_id: str, what: str, operation, *args) -> None:
    """Ask the share state; a failure is logged, never raised into the runtime carrying out
    the result (its replies and continuations still run)."""
    try:
        outcome = operation(*args)
    except Exception:
        log.exception("share group %s: %s failed", group_id, what)
        return
    _follow(broker, group_id, outcome, what)


def _follow(broker, group_id: str, outcome, what: str) -> None:
    """Keep an awaitable outcome until it is done (the heartbeat waits for initialisations);
    log a failure."""
    if not inspect.isawaitable(outcome):
        return
    task = asyncio.ensure_future(outcome)
    running = _initializing.setdefault(broker, {}).setdefault(group_id, set())
    running.add(task)

    def done(finished: asyncio.Future) -> None:
        running.discard(finished)
        if not finished.cancelled() and finished.exception() is not None:
            log.error("share group %s: %s failed: %r", group_id, what, finished.exception())

    task.add_done_callback(done)


def initialize_share_state(broker, effect: ShareStateWanted) -> None:
    state = _state(broker, f"initialise {len(effect.partitions)} partitions of "
                           f"{effect.group_id}")
    if state is None:
        return
    partitions = [(uuid.UUID(bytes=topic_id), p) for topic_id, p in effect.partitions]
    _call(broker, effect.group_id, "initialising share state", state.initialize,
          effect.group_id, partitions)


def group_deleted(broker, effect: ShareGroupGone) -> None:
    state = _state(broker, f"drop the share state of {effect.group_id}")
    if state is not None:
        _call(broker, effect.group_id, "deleting share state", state.group_deleted,
              effect.group_id)


async def initialized(broker, group_id: str) -> None:
    """Until every share-state operation the group's results asked for so far is done."""
    running = _initializing.get(broker, {}).get(group_id, ())
    while pending := [task for task in running if not task.done()]:
        await asyncio.wait(pending)


# ApiVersions' share.version, as Kafka 4.4.0 advertises it: supported 0-2, finalized at 2
# (level 1 share groups, level 2 their dead-letter queue, KIP-1191)
SHARE_VERSION = ("share.version", 0, 2)
SHARE_VERSION_LEVEL = 2


def _recorder():
    from roster.observability.share_recorder import ShareRecorder
    return ShareRecorder()


def share_features(broker) -> tuple[list, list]:
    """ApiVersions' (supported, finalized) share.version, when the share type is registered."""
    groups = getattr(broker, "groups", None)
    if groups is None or groups.shard.maker("share") is None:
        return [], []
    return [SHARE_VERSION], [(SHARE_VERSION[0], SHARE_VERSION_LEVEL)]


SHARE = GroupTypeRegistration(
    "share", make=_make, configure=_settings, recorder=_recorder,
    effects={ShareStateWanted: initialize_share_state, ShareGroupGone: group_deleted},
    describe_view=SHARE_VIEW, group_configs=SHARE_CONFIGS,
    # built on its first heartbeat or record (coordinator/unbuilt_type.py): a broker without
    # share groups never loads coordinator/share/; its records are types 10-15
    on_first_use=OnFirstUse(accepts=frozenset({"share", "classic"}),
                            serves=frozenset({"share", "classic"}),
                            record_types=frozenset(range(10, 16))))


def share_type(broker):
    """The broker's share group type (coordinator/share/coordinator.ShareCoordinator: its
    `is_member(group_id, member_id)`, `assigned(group_id, member_id)`, `describe(group_id)`),
    or None when it is not registered."""
    for group_type in broker.groups.shard.types:
        if group_type.name == "share":
            return group_type
    return None
