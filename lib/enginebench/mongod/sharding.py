"""Sharding a workload's collections on a sharded deployment, and reading the shards' engines.

A cluster only spreads data that is sharded: without enableSharding/shardCollection everything
stays on the primary shard. Every collection a workload creates through mongos is sharded when
it is created (empty), on:
  LinkBench `link`    {link_type: 1, id1: 1}: its unique link_pk (link_type, id1, id2) must start
                      with the shard key, and id1 spreads each link type's rows
  LinkBench `count`   {id: 1}: a prefix of its unique count_pk (id, link_type)
  everything else     {_id: "hashed"} (iibench, sysbench, TokuMX's tests, the flashback mix: no
                      unique secondary index, and hashing spreads their increasing _ids)
Capped collections cannot be sharded and stay on the primary shard.

mongos's serverStatus has no storage engine section: engine counters are read from each shard's
primary and summed; mongos keeps its own opcounters (the shards' are kept as shards.opcounters.*).
"""
from __future__ import annotations

SHARD_KEYS = {"link": {"link_type": 1, "id1": 1}, "count": {"id": 1}}
DEFAULT_KEY = {"_id": "hashed"}
ALREADY_INITIALIZED = 23   # enableSharding on a database that already has it (before 4.x's no-op)


def shard_key(collection: str) -> dict:
    return dict(SHARD_KEYS.get(collection, DEFAULT_KEY))


def shard_collection(client, database: str, collection: str) -> dict:
    """enableSharding on the database (once) and shardCollection with the collection's key."""
    from pymongo.errors import OperationFailure
    try:
        client.admin.command("enableSharding", database)
    except OperationFailure as exc:
        if exc.code != ALREADY_INITIALIZED:
            raise
    key = shard_key(collection)
    client.admin.command("shardCollection", f"{database}.{collection}", key=key)
    return key


def shard_uris(list_shards: dict) -> dict[str, str]:
    """Shard name -> a URI of its replica set, from a listShards reply (host: "rs/h1:p1,h2:p2")."""
    out = {}
    for shard in list_shards.get("shards", []):
        name, _, hosts = shard["host"].partition("/")
        out[shard["_id"]] = f"mongodb://{hosts}/?replicaSet={name}" if hosts else f"mongodb://{name}/"
    return out


def sum_shard_counters(mongos: dict, shards: list[dict]) -> dict:
    """mongos's flattened counters plus the shards' summed: engine counters under their own
    names, the shards' opcounters as shards.opcounters.*."""
    out = dict(mongos)
    for flat in shards:
        for key, value in flat.items():
            name = f"shards.{key}" if key.startswith("opcounters") else key
            out[name] = out.get(name, 0) + value
    return out
