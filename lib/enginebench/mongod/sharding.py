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

A ranged key on an empty collection gives one chunk, and at our sizes the balancer never moves
it: LinkBench's link and count would stay on one shard. They are pre-split at their keys'
quantiles (id1 and id are uniform over [startid1, maxid1), each link type alike) into one chunk
per shard, and each chunk is moved to its shard before the load (`split` with `middle`,
`moveChunk` with `bounds` and `to`: mongodb r3.2.0 src/mongo/s/commands/
cluster_split_collection_cmd.cpp and cluster_move_chunk_cmd.cpp). Hashed keys cannot be used
there: a unique index (link_pk, count_pk) needs a ranged key that prefixes it. After each phase
the collections' per-shard counts (collStats' `shards`) say how the data spread (serverstats.py).

mongos's serverStatus has no storage engine section: engine counters are read from each shard's
primary and summed; mongos keeps its own opcounters (the shards' are kept as shards.opcounters.*).
"""
from __future__ import annotations

SHARD_KEYS = {"link": {"link_type": 1, "id1": 1}, "count": {"id": 1}}
DEFAULT_KEY = {"_id": "hashed"}
ALREADY_INITIALIZED = 23   # enableSharding on a database that already has it (before 4.x's no-op)


# LinkBench's link types: DEFAULT_LINK_TYPE + i for i < link_type_count (lib/native/src/workloads/
# linkbench/mod.rs, LinkBench's LinkStore.DEFAULT_LINK_TYPE); its ids run over [startid1, maxid1).
DEFAULT_LINK_TYPE = 123456789
# moveChunk of a chunk to the shard that has it: mongodb r3.2.0 cluster_move_chunk_cmd.cpp answers
# errmsg "that chunk is already on that shard"; nothing to do.
ALREADY_THERE = "already on that shard"


def shard_key(collection: str) -> dict:
    return dict(SHARD_KEYS.get(collection, DEFAULT_KEY))


def shard_collection(client, database: str, collection: str, splits: list[dict] | None = None,
                     shards: list[str] | None = None) -> dict:
    """enableSharding on the database (once), shardCollection with the collection's key, and the
    collection's pre-split chunks moved one to each shard (when `splits` are given)."""
    from pymongo.errors import OperationFailure
    try:
        client.admin.command("enableSharding", database)
    except OperationFailure as exc:
        if exc.code != ALREADY_INITIALIZED:
            raise
    key = shard_key(collection)
    ns = f"{database}.{collection}"
    client.admin.command("shardCollection", ns, key=key)
    if splits and shards:
        presplit(client, ns, key, splits, shards)
    return key


def split_points(workload: dict, shards: int) -> dict[str, list[dict]]:
    """LinkBench's split points per collection: one chunk per shard and link type for `link`
    (each type's id1 range cut at its quantiles), one per shard for `count`. {} for the other
    workloads: their hashed keys are split by shardCollection itself."""
    if workload.get("name") != "linkbench" or shards < 2:
        return {}
    start, end = int(workload.get("startid1", 1)), int(workload["maxid1"])
    cuts = [start + (end - start) * k // shards for k in range(1, shards)]
    types = [DEFAULT_LINK_TYPE + i for i in range(int(workload.get("link_type_count", 2)))]
    link = []
    for n, link_type in enumerate(types):
        if n:  # each type starts a chunk of its own, so every type has one chunk per shard
            link.append({"link_type": link_type, "id1": start})
        link += [{"link_type": link_type, "id1": cut} for cut in cuts]
    return {"link": link, "count": [{"id": cut} for cut in cuts]}


def chunk_bounds(key: dict, points: list[dict]) -> list[tuple[dict, dict]]:
    """The chunks `points` cut the key's whole range into, in key order (MinKey to MaxKey)."""
    from bson.max_key import MaxKey
    from bson.min_key import MinKey
    low, high = {f: MinKey() for f in key}, {f: MaxKey() for f in key}
    edges = [low] + list(points) + [high]
    return list(zip(edges[:-1], edges[1:]))


def presplit(client, ns: str, key: dict, points: list[dict], shards: list[str]) -> list[str]:
    """Split an empty collection at `points` and move chunk i to shards[i % len(shards)]; the
    shard each chunk went to, in key order."""
    from pymongo.errors import OperationFailure
    for point in points:
        client.admin.command("split", ns, middle=point)
    placed = []
    for i, bounds in enumerate(chunk_bounds(key, points)):
        to = shards[i % len(shards)]
        try:
            client.admin.command("moveChunk", ns, bounds=list(bounds), to=to)   # empty: nothing to delete after
        except OperationFailure as exc:
            if ALREADY_THERE not in str(exc):
                raise
        placed.append(to)
    return placed


def spread(collstats: dict, cluster_shards: list[str]) -> dict | None:
    """How a sharded collection's documents lie across the cluster, from collStats through mongos
    (its `shards` holds each owning shard's own collStats: mongodb r3.2.0
    src/mongo/s/commands/commands_public.cpp CollectionStats): {shard: {count, share}}, every
    cluster shard named (0 where it has none). None for a collection that is not sharded."""
    if not collstats.get("sharded") or not isinstance(collstats.get("shards"), dict):
        return None
    counts = {name: int((collstats["shards"].get(name) or {}).get("count") or 0) for name in cluster_shards}
    for name, stats in collstats["shards"].items():
        counts.setdefault(name, int((stats or {}).get("count") or 0))
    total = sum(counts.values())
    return {name: {"count": n, "share": round(n / total, 4) if total else 0.0} for name, n in counts.items()}


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
