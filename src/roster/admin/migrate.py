"""`roster migrate --to BOOTSTRAP`: what MirrorMaker 2 does not carry from roster to a Kafka
cluster, carried through Kafka's admin APIs (docs/migrate.md).

MirrorMaker 2 copies the records and translates the offsets of groups it sees; it copies some
topic configs (not min.insync.replicas, among others), only literal topic ACLs (never ALLOW
WRITE, ALLOW ALL narrowed to READ), no group configs and no users. This command plans, from
the roster broker (--bootstrap-server) and the target as they are now:

- topics: create the missing ones with roster's partition count and own configs; set the own
  configs that differ on existing ones. A topic with fewer partitions on the target is refused
  (growing it moves keys between partitions for whoever writes there already: the operator's
  call, not ours);
- every ACL binding, exactly as roster has it;
- SCRAM users, with the passwords of --users-file (a fresh salt, roster's mechanism and
  iterations): nothing else can re-make a credential;
- group configs Kafka knows (consumer.session.timeout.ms, consumer.heartbeat.interval.ms);
  roster's pre-registered static members cannot exist on Kafka and are named;
- committed offsets of partitions the group has none for on the target, when the partition's
  offsets line up on both sides (same log start and end, as a caught-up mirror of an
  uncompacted, non-transactional log has) and the group is empty there (Kafka's
  AlterConsumerGroupOffsets rule). Other offsets are MM2's to translate, and so is a commit's
  metadata string: admin/offsets.py reads offsets alone, so one carried here has none.

It only adds and sets: nothing on the target is deleted, and nothing is done twice, so a second
run finds nothing to do. Planning reads only; --execute carries the plan out and then reads the
target again until it shows what was done.
"""
from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from roster.admin import acls as acl_wire
from roster.admin import groups as group_wire
from roster.admin import offsets as offset_wire
from roster.admin import reset as offset_reset
from roster.admin import topics as topic_wire
from roster.admin.client import AdminClient, AdminError
from roster.admin.cluster import Cluster
from roster.admin.table import columns
from roster.protocol.api_keys import ApiKey
from roster.security import users as user_wire
from roster.security.acls import AclBinding, AclFilter, Operation

DESCRIBE_CONFIGS, INCREMENTAL_ALTER_CONFIGS = (ApiKey.DESCRIBE_CONFIGS,
                                               ApiKey.INCREMENTAL_ALTER_CONFIGS)
DESCRIBE_CLUSTER, LIST_CONFIG_RESOURCES = ApiKey.DESCRIBE_CLUSTER, ApiKey.LIST_CONFIG_RESOURCES
TOPIC, GROUP = 2, 32                           # ConfigResource.Type
DYNAMIC_TOPIC_CONFIG, GROUP_CONFIG = 1, 8      # DescribeConfigs' config sources
SET = 0
# roster-only group configs: the pre-registered static members (docs/groups.md)
EXPECTED_PREFIX = "group.expected."
PROBE_GROUP = "roster-migrate-probe"
# what the target's principal must hold on the cluster: Describe for DescribeAcls and
# DescribeUserScramCredentials, Alter for CreateAcls and AlterUserScramCredentials
NEEDED_ON_CLUSTER = (Operation.DESCRIBE, Operation.ALTER)
SETTLE_S = 30.0   # how long --execute waits for the target to show what it did


class MigrateError(AdminError):
    """The migration is refused before anything is changed."""


@dataclass
class Step:
    what: str
    name: str
    action: str
    run: Callable[[Cluster], None] = field(repr=False)


@dataclass
class Plan:
    source: str
    target: str
    target_brokers: int
    steps: list[Step] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _error_name(code) -> str:
    return getattr(code, "name", str(code)).upper()


def never_carried(name: str) -> bool:
    """Topics that MirrorMaker's ReplicationPolicy.isInternalTopic calls internal (a broker's
    own, `__` or `.` first; MM2's and Kafka Connect's, `.internal` or `-internal` last) and
    MM2's heartbeats: never carried, since whatever runs on the target makes its own."""
    return (name.startswith(("__", ".")) or name.endswith((".internal", "-internal"))
            or name == "heartbeats")


# -- connecting ---------------------------------------------------------------------------------

def check_target(source: Cluster, target: Cluster) -> None:
    """Refuse a target that is roster (the source itself, or another roster broker) or whose
    principal lacks the cluster rights migrating needs."""
    ours = _cluster_id(source.main)
    theirs = _cluster_id(target.main)
    if ours and ours == theirs:
        raise MigrateError(f"the target {target.bootstrap} is the source itself (cluster id "
                           f"{ours}): give --to the Kafka cluster's bootstrap address")
    probe = _describe_configs(target.main, GROUP, [PROBE_GROUP], check=False)
    known = probe.get(PROBE_GROUP)
    if known and any(c.name.startswith(EXPECTED_PREFIX) for c in known):
        # only roster has group.expected.* (pre-registered static members); Kafka's group
        # configs are its consumer/share/streams settings
        raise MigrateError(f"the target {target.bootstrap} is a roster broker (it knows "
                           "roster's own group configs, group.expected.*): roster migrate "
                           "moves from roster to Apache Kafka")
    operations = _cluster_operations(target.main)
    missing = [op.name for op in NEEDED_ON_CLUSTER if operations is not None
               and not operations & (1 << op) and not operations & (1 << Operation.ALL)]
    if missing:
        raise MigrateError(f"the target {target.bootstrap} refuses the rights migrating needs "
                           f"(CLUSTER_AUTHORIZATION_FAILED): its principal may not "
                           f"{' or '.join(missing)} the cluster; use a super user of the "
                           "target, or one with Describe and Alter on the cluster there")


def _cluster_id(client: AdminClient) -> str | None:
    try:
        answer = client.call(DESCRIBE_CLUSTER, include_cluster_authorized_operations=False,
                             endpoint_type=1, include_fenced_brokers=False)
    except AdminError:
        return None
    return answer.cluster_id if not answer.error_code.value else None


def _cluster_operations(client: AdminClient) -> int | None:
    answer = client.call(DESCRIBE_CLUSTER, include_cluster_authorized_operations=True,
                         endpoint_type=1, include_fenced_brokers=False)
    if answer.error_code.value:
        raise MigrateError(f"DescribeCluster failed on the target: "
                           f"{_error_name(answer.error_code)}")
    operations = answer.cluster_authorized_operations
    return None if operations == -(2 ** 31) else operations


# -- reading ------------------------------------------------------------------------------------

def _describe_configs(client: AdminClient, resource_type: int, names: list[str],
                      check: bool = True) -> dict[str, list]:
    """name -> its config entries (None for a resource the broker refused, when not check)."""
    if not names:
        return {}
    resource = client.entry(DESCRIBE_CONFIGS, "resources")
    answer = client.call(DESCRIBE_CONFIGS, include_synonyms=False, include_documentation=False,
                         resources=tuple(resource(resource_type=resource_type, resource_name=n,
                                                  configuration_keys=None) for n in names))
    found = {}
    for result in answer.results:
        if result.error_code.value:
            if check:
                raise AdminError(f"cannot describe the configs of {result.resource_name}: "
                                 f"{_error_name(result.error_code)}"
                                 + (f" ({result.error_message})" if result.error_message
                                    else ""))
            found[result.resource_name] = None
        else:
            found[result.resource_name] = list(result.configs)
    return found


def group_configs(client: AdminClient, group_id: str) -> dict[str, str]:
    """The configs set on the group itself."""
    return _own(_describe_configs(client, GROUP, [group_id]).get(group_id), GROUP_CONFIG)


def _own(entries, source: int) -> dict[str, str]:
    return {c.name: c.value for c in entries or () if c.config_source == source}


def _topics(cluster: Cluster, names: list[str] | None):
    answer = topic_wire.metadata(cluster.main, names)
    return {t.name: t for t in answer.topics}


def _log_offsets(cluster: Cluster, topics, which: int) -> dict[tuple[str, int], int]:
    """Each partition's earliest or latest offset, asked of its leader."""
    by_leader: dict[int, dict[str, list[int]]] = {}
    for (topic, partition), leader in cluster.leaders(topics).items():
        by_leader.setdefault(leader, {}).setdefault(topic, []).append(partition)
    found = {}
    for leader, wanted in by_leader.items():
        found.update(offset_wire.log_offsets(cluster.node(leader), wanted, which))
    return found


def _acls(client: AdminClient) -> list[AclBinding] | None:
    """Every binding; None when the broker has no authorizer."""
    try:
        return acl_wire.describe(client, AclFilter())
    except acl_wire.AclsError as exc:
        if "SECURITY_DISABLED" in str(exc):
            return None
        raise


def _groups_with_configs(client: AdminClient, listed: list[str]) -> list[str]:
    """Groups with configs of their own: ListConfigResources where the broker has it (a group
    may be configured before it exists), else the groups listed."""
    try:
        version = client.version(LIST_CONFIG_RESOURCES)
    except AdminError:
        version = -1
    if version >= 1:
        answer = client.call(LIST_CONFIG_RESOURCES, resource_types=(GROUP,))
        if not answer.error_code.value:
            return sorted({r.resource_name for r in answer.config_resources} | set(listed))
    return listed


# -- planning -----------------------------------------------------------------------------------

def plan(source: Cluster, target: Cluster, passwords=None, target_security=None) -> Plan:
    """What carrying roster's state to the target takes, read from both as they are now."""
    planned = Plan(source.bootstrap, target.bootstrap, len(target.brokers()))
    _plan_topics(source, target, planned)
    _plan_acls(source, target, planned)
    _plan_users(source, target, planned, passwords, target_security)
    _plan_groups(source, target, planned)
    return planned


def _plan_topics(source: Cluster, target: Cluster, planned: Plan) -> None:
    ours = {name: t for name, t in _topics(source, None).items()
            if not t.is_internal and not never_carried(name) and not t.error_code.value}
    if not ours:
        return
    theirs = {name: t for name, t in _topics(target, sorted(ours)).items()
              if not t.error_code.value}
    fewer = [f"{name} has {len(theirs[name].partitions)} partition(s) on the target, "
             f"{len(t.partitions)} on roster" for name, t in sorted(ours.items())
             if name in theirs and len(theirs[name].partitions) < len(t.partitions)]
    if fewer:
        raise MigrateError("refused, nothing was changed: topic " + "; ".join(fewer) +
                           ": records of the missing partitions would have nowhere to go; "
                           "grow the topic on the target first (kafka-topics --alter "
                           "--partitions N) if adding partitions is right for its producers")
    our_configs = _describe_configs(source.main, TOPIC, sorted(ours))
    their_configs = _describe_configs(target.main, TOPIC, sorted(theirs))
    for name, topic in sorted(ours.items()):
        own = _own(our_configs.get(name), DYNAMIC_TOPIC_CONFIG)
        count = len(topic.partitions)
        if name not in theirs:
            settings = ", ".join(f"{k}={v}" for k, v in sorted(own.items()))
            planned.steps.append(Step(
                "topic", name, f"create with {count} partition(s)"
                + (f"; {settings}" if settings else ""),
                lambda t, name=name, count=count, own=own:
                    topic_wire.create(t.main, name, count, own)))
            continue
        if len(theirs[name].partitions) > count:
            planned.notes.append(f"topic {name} has more partitions on the target "
                                 f"({len(theirs[name].partitions)}) than on roster ({count}): "
                                 "left as it is")
        # against the target's effective values: one its defaults already give is not set
        present = {c.name: c.value for c in their_configs.get(name) or ()}
        _plan_configs(planned, TOPIC, name, own, present, show_present=True)


def _plan_configs(planned: Plan, resource_type: int, name: str, own: dict[str, str],
                  present: dict[str, str], show_present: bool = False) -> None:
    """A step setting those of `own` that `present` (the target's) lacks or has otherwise."""
    differ = {k: v for k, v in own.items() if present.get(k) != v}
    if not differ:
        return
    what = "topic config" if resource_type == TOPIC else "group config"
    planned.steps.append(Step(what, name, "set " + ", ".join(
        f"{k}={v}" + (f" (target: {present.get(k, '-')})" if show_present else "")
        for k, v in sorted(differ.items())),
        lambda t: _set_configs(t.main, resource_type, name, differ)))


def _plan_acls(source: Cluster, target: Cluster, planned: Plan) -> None:
    ours = _acls(source.main)
    if not ours:
        return
    theirs = _acls(target.main)
    if theirs is None:
        raise MigrateError(f"refused, nothing was changed: the target {target.bootstrap} has no "
                           f"authorizer (SECURITY_DISABLED), so the {len(ours)} ACL(s) roster "
                           "enforces would not be enforced there; set authorizer.class.name "
                           "on the target first")
    present = set(theirs)
    for binding in sorted(set(ours) - present, key=lambda b: b.to_json()):
        planned.steps.append(Step(
            "acl", f"{binding.resource_type.name}:{binding.name} ({binding.pattern.name})",
            f"add {binding.permission.name} {binding.operation.name} for {binding.principal} "
            f"from host {binding.host}",
            lambda t, binding=binding: acl_wire.add(t.main, [binding])))


def _plan_users(source: Cluster, target: Cluster, planned: Plan, passwords,
                target_security) -> None:
    try:
        ours = user_wire.list_wire(source.main)
    except user_wire.UsersError as exc:
        raise AdminError(f"cannot list roster's SCRAM users: {exc}") from None
    if passwords is not None:
        strangers = sorted(set(passwords.users()) - {name for name, _ in ours})
        if strangers:
            planned.notes.append("in the users file but no SCRAM user on roster (ignored): "
                                 + ", ".join(strangers))
    if not ours:
        return
    try:
        theirs = {name: dict(mechanisms) for name, mechanisms in user_wire.list_wire(target.main)}
    except user_wire.UsersError as exc:
        raise MigrateError(f"cannot list the target's SCRAM users: {exc}") from None
    needs, unchecked = [], []
    for name, mechanisms in ours:
        password = passwords.get(name) if passwords is not None else None
        for mechanism, iterations in mechanisms:
            there = mechanism in theirs.get(name, {})
            if password is None:
                (unchecked if there else needs).append(f"{name} ({mechanism})")
                continue
            if there:
                verdict = _logs_in(target, target_security, name, mechanism, password)
                if verdict is None:
                    unchecked.append(f"{name} ({mechanism})")
                if verdict is not False:
                    continue
                action = f"update (iterations={iterations}): the password on the target differs"
            else:
                action = f"create (iterations={iterations}) with the password from the users file"
            planned.steps.append(Step(
                "user", f"{name} {mechanism}", action,
                lambda t, n=name, m=mechanism, i=iterations, p=password:
                    _upsert_user(t.main, n, m, p, i)))
    if needs:
        planned.notes.append("users not carried, they need a password (add user=password "
                             "lines to --users-file): " + ", ".join(needs))
    if unchecked:
        planned.notes.append("users present on the target, their passwords not checked (none "
                             "given, or the target's listener offers no SASL with that "
                             "mechanism): " + ", ".join(unchecked))


def _logs_in(target: Cluster, security, name: str, mechanism: str,
             password: str) -> bool | None:
    """Whether the user authenticates on the target with this password (None: cannot tell,
    the target's listener is not SASL or lacks the mechanism)."""
    if security is None or not security.sasl:
        return None
    as_user = dataclasses.replace(security, mechanism=mechanism, username=name,
                                  password=password)
    try:
        AdminClient(target.address, security=as_user).close()
    except AdminError as exc:
        return None if "does not offer SASL mechanism" in str(exc) else False
    return True


def _upsert_user(client: AdminClient, name: str, mechanism: str, password: str,
                 iterations: int) -> None:
    try:
        user_wire.add_wire(client, name, mechanism, password, iterations)
    except user_wire.UsersError as exc:
        raise AdminError(str(exc)) from None


def _plan_groups(source: Cluster, target: Cluster, planned: Plan) -> None:
    listed = [g for g, _, _ in group_wire.list_groups(source.main)]
    configured = _groups_with_configs(source.main, listed)
    _plan_group_configs(source, target, planned, configured)
    _plan_offsets(source, target, planned, listed)


def _plan_group_configs(source: Cluster, target: Cluster, planned: Plan,
                        configured: list[str]) -> None:
    ours = {g: _own(entries, GROUP_CONFIG)
            for g, entries in _describe_configs(source.main, GROUP, configured).items()}
    expected = {g: own for g, own in ((g, {k: v for k, v in o.items()
                                           if k.startswith(EXPECTED_PREFIX) and v})
                                      for g, o in ours.items()) if own}
    if expected:
        planned.notes.append(
            "not carried: pre-registered static members cannot exist on Kafka (a static "
            "group there forms from whoever joins): " + "; ".join(
                f"{g} ({', '.join(f'{k[len(EXPECTED_PREFIX):]}={v}' for k, v in sorted(e.items()))})"
                for g, e in sorted(expected.items())))
    carried = {g: {k: v for k, v in own.items() if not k.startswith(EXPECTED_PREFIX)}
               for g, own in ours.items()}
    carried = {g: own for g, own in carried.items() if own}
    if not carried:
        return
    theirs = _describe_configs(target.main, GROUP, sorted(carried))
    for group_id, own in sorted(carried.items()):
        _plan_configs(planned, GROUP, group_id, own, _own(theirs.get(group_id), GROUP_CONFIG))


def _plan_offsets(source: Cluster, target: Cluster, planned: Plan, listed: list[str]) -> None:
    # an offset on a topic that is never carried has nowhere to go
    committed = {g: o for g in listed
                 if (o := {tp: offset for tp, offset in
                           offset_wire.committed(source.main, g).items()
                           if not never_carried(tp[0])})}
    if not committed:
        return
    names = sorted({topic for offsets in committed.values() for topic, _ in offsets})
    ours_meta = _topics(source, names)
    theirs_meta = {n: t for n, t in _topics(target, names).items() if not t.error_code.value}
    ours = {which: _log_offsets(source, [ours_meta[n] for n in names if n in ours_meta], which)
            for which in (offset_wire.EARLIEST, offset_wire.LATEST)}
    theirs = {which: _log_offsets(target, list(theirs_meta.values()), which)
              for which in (offset_wire.EARLIEST, offset_wire.LATEST)}

    # a topic this plan creates starts empty on the target, at offset 0
    created = {s.name for s in planned.steps if s.what == "topic"}
    for side in theirs.values():
        side.update({tp: 0 for tp in ours[offset_wire.LATEST] if tp[0] in created})

    def lined_up(tp) -> bool:
        return all(tp in theirs[w] and ours[w].get(tp) == theirs[w][tp] for w in ours)

    for group_id, offsets in sorted(committed.items()):
        coordinator = target.coordinator(group_id)
        present = offset_wire.committed(coordinator, group_id)
        wanted = {tp: o for tp, o in offsets.items() if tp not in present}
        if not wanted:
            continue
        state, members = _target_state(coordinator, group_id)
        if members:
            planned.notes.append(f"offsets of {group_id} not carried: the group is active on "
                                 f"the target ({state}, {members} member(s)); offsets are "
                                 "written only into empty groups")
            continue
        carried = {tp: o for tp, o in wanted.items() if lined_up(tp)}
        apart = sorted(set(wanted) - set(carried))
        if apart:
            planned.notes.append(
                f"offsets of {group_id} not carried for " + ", ".join(
                    f"{t}-{p}" + _span(ours, theirs, (t, p)) for t, p in apart)
                + ": the partition's offsets differ between roster and the target; leave "
                "these to MirrorMaker 2's offset translation")
        if carried:
            planned.steps.append(Step(
                "offsets", group_id, "commit " + ", ".join(
                    f"{t}-{p}={o}" for (t, p), o in sorted(carried.items())),
                lambda t, g=group_id, carried=carried: _commit(t, g, carried)))


def _span(ours, theirs, tp) -> str:
    def of(side):
        start, end = side[offset_wire.EARLIEST].get(tp), side[offset_wire.LATEST].get(tp)
        return "-" if start is None or end is None else f"{start}..{end}"
    return f" (roster {of(ours)}, target {of(theirs)})"


def _target_state(client: AdminClient, group_id: str) -> tuple[str, int]:
    try:
        group = group_wire.describe(client, group_id)
    except group_wire.GroupNotFound:
        return "Dead", 0
    return group.group_state, len(group.members)


# -- doing --------------------------------------------------------------------------------------

def _set_configs(client: AdminClient, resource_type: int, name: str,
                 values: dict[str, str]) -> None:
    resource = client.entry(INCREMENTAL_ALTER_CONFIGS, "resources")
    config = client.entry(INCREMENTAL_ALTER_CONFIGS, "resources", "configs")
    answer = client.call(INCREMENTAL_ALTER_CONFIGS, validate_only=False, resources=(resource(
        resource_type=resource_type, resource_name=name, configs=tuple(
            config(name=k, config_operation=SET, value=v) for k, v in values.items())),))
    result = answer.responses[0]
    if result.error_code.value:
        raise AdminError(f"{_error_name(result.error_code)}"
                         + (f" ({result.error_message})" if result.error_message else ""))


# what a group with members answers an admin's commit (classic, then KIP-848 groups)
ACTIVE_GROUP_ERRORS = ("UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION", "STALE_MEMBER_EPOCH",
                       "REBALANCE_IN_PROGRESS")


def _commit(target: Cluster, group_id: str, offsets: dict[tuple[str, int], int]) -> None:
    """The admin's OffsetCommit of `roster offsets reset` (generation -1, no member: what
    AlterConsumerGroupOffsets sends), to the group's coordinator; a group that gained members
    since the plan refuses it."""
    try:
        offset_reset.execute(target.coordinator(group_id), offset_reset.Plan(group_id, offsets))
    except AdminError as exc:
        if any(code in str(exc) for code in ACTIVE_GROUP_ERRORS):
            raise AdminError(f"the group became active on the target, its members commit "
                             f"now ({exc})") from None
        raise


@dataclass
class Outcome:
    done: list[Step]
    failed: list[tuple[Step, str]]
    left: list[Step]   # steps the target does not show as done once settled


def execute(planned: Plan, target: Cluster, replan: Callable[[], Plan],
            settle_s: float = SETTLE_S) -> Outcome:
    """Carry out every step (a failed one does not stop the others), then read the target
    again until it shows them done: a KRaft broker answers from its metadata image, which
    follows the controller by a moment."""
    done, failed = [], []
    for step in planned.steps:
        try:
            step.run(target)
        except AdminError as exc:
            failed.append((step, str(exc)))
        else:
            done.append(step)
    # (several ACL steps share a resource: the action tells them apart)
    keys = {(s.what, s.name, s.action) for s in done}
    deadline = time.monotonic() + settle_s
    while True:
        left = [s for s in replan().steps if (s.what, s.name, s.action) in keys]
        if not left or time.monotonic() >= deadline:
            return Outcome(done, failed, left)
        time.sleep(0.2)   # the metadata image catches up within milliseconds


# -- printing -----------------------------------------------------------------------------------

HEADER = ("WHAT", "NAME", "ACTION")


def plan_lines(planned: Plan, executing: bool = False) -> list[str]:
    kind = "Kafka cluster" if planned.target_brokers > 1 else "Kafka broker"
    lines = [f"Migration from roster {planned.source} to the {kind} {planned.target} "
             f"({planned.target_brokers} broker(s)):"]
    if planned.steps:
        lines += columns([HEADER] + [(s.what, s.name, s.action) for s in planned.steps])
    else:
        lines.append("nothing to migrate")
    if planned.notes:
        lines.append("Not carried or left alone:")
        lines += [f"  {note}" for note in planned.notes]
    if planned.steps and not executing:
        lines.append(f"Dry run: nothing was changed. Add --execute to carry out these "
                     f"{len(planned.steps)} step(s).")
    return lines


def outcome_lines(outcome: Outcome) -> list[str]:
    lines = columns([("DONE", "NAME", "ACTION")] + [(s.what, s.name, s.action)
                                                    for s in outcome.done]) \
        if outcome.done else []
    for step, why in outcome.failed:
        lines.append(f"FAILED {step.what} {step.name}: {why}")
    for step in outcome.left:
        lines.append(f"NOT YET SHOWN by the target: {step.what} {step.name}")
    if not outcome.failed and not outcome.left:
        lines.append(f"Carried out {len(outcome.done)} step(s); the target shows nothing left "
                     "to migrate.")
    return lines
