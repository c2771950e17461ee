"""AlterUserScramCredentials (51), v0: add, replace or delete users' SCRAM credentials — what
`kafka-configs --entity-type users --alter --add-config 'SCRAM-SHA-256=[password=...]'` and
admin clients' alter_user_scram_credentials send. The client sends a salt and the salted
password; roster keeps only the salt, StoredKey, ServerKey and iterations
(security/credentials.py), and answers once they are fsynced.

Checks and errors as Kafka's controller (ScramControlManager): one alteration per user per
request (DUPLICATE_RESOURCE otherwise), an empty name is UNACCEPTABLE_CREDENTIAL, an unknown
mechanism UNSUPPORTED_SASL_MECHANISM, iterations outside 4096..16384 UNACCEPTABLE_CREDENTIAL,
deleting a credential that does not exist RESOURCE_NOT_FOUND. Users with an error are left
as they were; the others' changes are written together.
"""
from __future__ import annotations

import logging

from roster.protocol.acl import AclOperation
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import ApiSpec, Cluster
from roster.security.credentials import (
    MAX_ITERATIONS,
    MECHANISM_NAMES,
    MIN_ITERATIONS,
    from_salted_password,
)

API_KEY = ApiKey.ALTER_USER_SCRAM_CREDENTIALS
TWICE = "A user credential cannot be altered twice in the same request"

log = logging.getLogger("roster.security")


def _check_name_and_mechanism(name: str, mechanism: int):
    if not name:
        return ErrorCode.unacceptable_credential, "Username must not be empty"
    if mechanism not in MECHANISM_NAMES:
        return ErrorCode.unsupported_sasl_mechanism, "Unknown SCRAM mechanism"
    return None


async def handle(broker, request, connection):
    schema = response_schema(API_KEY, request.api_version)
    result = element(schema, "results")
    store = broker.scram_store()
    deletions: dict[str, object] = {}
    upserts: dict[str, object] = {}
    errors: dict[str, tuple[ErrorCode, str]] = {}
    for deletion in request.body.deletions:
        name = deletion.name
        if name in errors:
            continue
        if deletions.pop(name, None) is not None:
            errors[name] = (ErrorCode.duplicate_resource, TWICE)
            continue
        error = _check_name_and_mechanism(name, deletion.mechanism)
        if error is None and store.lookup(name, MECHANISM_NAMES[deletion.mechanism]) is None:
            error = (ErrorCode.resource_not_found,
                     "Attempt to delete a user credential that does not exist")
        if error is not None:
            errors[name] = error
        else:
            deletions[name] = deletion
    for upsertion in request.body.upsertions:
        name = upsertion.name
        if name in errors:
            continue
        if deletions.pop(name, None) is not None or upserts.pop(name, None) is not None:
            errors[name] = (ErrorCode.duplicate_resource, TWICE)
            continue
        error = _check_name_and_mechanism(name, upsertion.mechanism)
        if error is None and upsertion.iterations < MIN_ITERATIONS:
            error = (ErrorCode.unacceptable_credential, "Too few iterations")
        elif error is None and upsertion.iterations > MAX_ITERATIONS:
            error = (ErrorCode.unacceptable_credential, "Too many iterations")
        elif error is None and not (upsertion.salt and upsertion.salted_password):
            error = (ErrorCode.unacceptable_credential, "Salt and salted password are needed")
        if error is not None:
            errors[name] = error
        else:
            upserts[name] = upsertion
    changes = [(u.name, MECHANISM_NAMES[u.mechanism],
                from_salted_password(MECHANISM_NAMES[u.mechanism], bytes(u.salt),
                                     bytes(u.salted_password), int(u.iterations)))
               for u in upserts.values()]
    removals = [(d.name, MECHANISM_NAMES[d.mechanism]) for d in deletions.values()]
    if changes or removals:
        await store.apply_async(changes, removals)
        for name, mechanism, _ in changes:
            log.info("SCRAM credential %s of user %s set by %s", mechanism, name,
                     getattr(connection, "principal", "?"))
        for name, mechanism in removals:
            log.info("SCRAM credential %s of user %s deleted by %s", mechanism, name,
                     getattr(connection, "principal", "?"))
    results = [make(result, user=name, error_code=ErrorCode.none, error_message=None)
               for name in (*deletions, *upserts)]
    results += [make(result, user=name, error_code=code, error_message=message)
                for name, (code, message) in errors.items()]
    return make(schema, results=tuple(results))


def refuse(request, error: ErrorCode):
    """Every user named answers `error` (Kafka's AlterUserScramCredentialsRequest
    .getErrorResponse)."""
    schema = response_schema(API_KEY, request.api_version)
    result = element(schema, "results")
    body = request.body
    users = dict.fromkeys([d.name for d in body.deletions] + [u.name for u in body.upsertions])
    return make(schema, results=tuple(make(result, user=user, error_code=error,
                                           error_message=None) for user in users))


SPEC = ApiSpec(API_KEY, "AlterUserScramCredentials", 0, 0, handle,
               resources=(Cluster(AclOperation.ALTER),), refuse=refuse)
