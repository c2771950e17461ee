"""DescribeUserScramCredentials (50), v0: which SCRAM mechanisms each user has, with their
iteration counts (never salts or keys). No users named (null or empty): every user.

As Kafka: a user named twice gets DUPLICATE_RESOURCE, an unknown one RESOURCE_NOT_FOUND; the
others are answered normally. (Who may ask is the authorization issue's: DESCRIBE on the
cluster.)
"""
from __future__ import annotations

from roster.protocol.acl import AclOperation
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import ApiSpec, Cluster
from roster.security.credentials import MECHANISM_IDS

API_KEY = ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS


async def handle(broker, request, connection):
    schema = response_schema(API_KEY, request.api_version)
    result = element(schema, "results")
    info = element(result, "credential_infos")
    store = broker.scram_store()

    def described(user: str):
        mechs = store.mechanisms(user)
        return make(result, user=user, error_code=ErrorCode.none, error_message=None,
                    credential_infos=tuple(
                        make(info, mechanism=MECHANISM_IDS[m], iterations=c.iterations)
                        for m, c in sorted(mechs.items())))

    wanted = request.body.users
    if not wanted:
        return make(schema, error_code=ErrorCode.none, error_message=None,
                    results=tuple(described(user) for user in store.users()))
    names = [u.name for u in wanted]
    results = []
    for name in dict.fromkeys(names):
        if names.count(name) > 1:
            results.append(make(result, user=name, error_code=ErrorCode.duplicate_resource,
                                error_message="Cannot describe SCRAM credentials for the same "
                                              f"user twice in a single request: {name}",
                                credential_infos=()))
        elif name not in store:
            results.append(make(result, user=name, error_code=ErrorCode.resource_not_found,
                                error_message="Attempt to describe a user credential that "
                                              f"does not exist: {name}",
                                credential_infos=()))
        else:
            results.append(described(name))
    return make(schema, error_code=ErrorCode.none, error_message=None, results=tuple(results))


def refuse(request, error: ErrorCode):
    return make(response_schema(API_KEY, request.api_version), error_code=error,
                error_message=None, results=())


SPEC = ApiSpec(API_KEY, "DescribeUserScramCredentials", 0, 0, handle,
               resources=(Cluster(AclOperation.DESCRIBE),), refuse=refuse)
