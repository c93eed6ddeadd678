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
A system whose load left a sharded collection off a shard measured fewer shards than it names:
the driver records it (`unspread` in the manifest), the report says so on its first screen, and
the claims that compare that system are not judged (report/trust.py).

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
# moveChunk of a chunk to the shard that already has it (each collection's first chunk sits on the
# primary shard), by server line:
#   3.0, 3.2  mongos refuses it: ok 0 with errmsg "that chunk is already on that shard" and no code
#             (mongodb r3.2.0 src/mongo/s/commands/cluster_move_chunk_cmd.cpp: `if (from == to)
#             { errmsg = "that chunk is already on that shard"; return false; }`); nothing to do.
#   3.4 on    mongos hands every move to the config server (configsvr_client::moveChunk) with no
#             check of its own, and the config server's MigrationManager::executeManualMigration
#             returns OK whatever the donor answered when the chunk's shard is the destination
#             (src/mongo/s/commands/cluster_move_chunk_cmd.cpp and src/mongo/db/s/balancer/
#             migration_manager.cpp at 01cb4a206af83bf49da4fa750aba4a3f4aeaea10, a 5.0 development
#             commit: `if (chunk.getShardId() == migrateInfo.to && commandStatus !=
#             ErrorCodes::BalancerInterrupted) return Status::OK();`; 3.4's copy of the file says
#             "Regardless of the failure mode, if the chunk's current shard matches the destination,
#             deem the move as success").
#   later     the same rule in the balancer (src/mongo/db/s/balancer/balancer.cpp at
#             0044527f9a34b3b37330bc03f3d2c97017ca261b, processManualMigrationOutcome, log id 6036622
#             "Migration outcome is not OK, but the transaction was committed. Returning success"),
#             and the donor's _shardsvrMoveRange (moveRange's) returns at once when fromShard == toShard
#             (src/mongo/db/s/shardsvr_move_range_command.cpp at 015b5d13b7638f97c6fbc1de57f4e90c5cea9be6).
# So only 3.0/3.2 answer a same-shard move with an error, and with no code to go by: their wording is
# the one recognised; later servers answer ok (with `millis`). Whatever the servers answered, the
# spread after the load is what says whether the data reached every shard (unspread below).
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


def unspread(db_stats: list[dict], phase: str = "load") -> list[dict]:
    """The sharded collections a system's load left off one or more shards, from its db_stats
    events (the runner's event of the companion's phase_stats after each phase; serverstats.py
    sets `shards` and `spread_ok` on a sharded collection's row): [{collection, phase, on: [the
    shards holding documents], shards: {shard: count}}]. Empty collections have nothing to spread."""
    found = []
    for event in db_stats:
        if event.get("phase") != phase:
            continue
        for name, row in sorted((event.get("collections") or {}).items()):
            shards = (row or {}).get("shards")
            if not isinstance(shards, dict) or row.get("spread_ok", True):
                continue
            counts = {shard: int((share or {}).get("count") or 0) for shard, share in shards.items()}
            on = [shard for shard, n in counts.items() if n > 0]
            if on:
                found.append({"collection": name, "phase": phase, "on": on, "shards": counts})
    return found


def unspread_text(label: str, item: dict) -> str:
    """"rx.sh's link sat on one shard (sh0 of sh0, sh1) after the load"."""
    on, every = item["on"], list(item["shards"])
    where = "one shard" if len(on) == 1 else f"{len(on)} of {len(every)} shards"
    return (f"{label}'s {item['collection']} sat on {where} ({', '.join(on)} of {', '.join(every)}) "
            f"after the {item['phase']}")


def run_unspread(run) -> dict[str, list[dict]]:
    """Per system of a run (report/rundata.RunData), what its sharded load left off a shard: the
    manifest's record (driver.py), or for a run recorded before it, the system's db_stats events."""
    out = {}
    for label, info in (run.manifest.get("systems") or {}).items():
        found = info.get("unspread")
        if found is None and (info.get("engine_config") or {}).get("mongos") and getattr(run, "path", None):
            from ..report.rundata import system_events
            found = unspread(system_events(run, label, "db_stats"))
        if found:
            out[label] = found
    return out


def banner_lines(run) -> list[str]:
    """For the first screen: each sharded system whose load did not reach every shard."""
    return [f"{'; '.join(unspread_text(label, item) for item in found)}: the cluster did not spread the load, so "
            f"{label} measured fewer shards than it names; its claims are not judged as sharded."
            for label, found in run_unspread(run).items()]


def claim_roles(run) -> dict[str, list[str]]:
    """Claim id -> the roles it compares (claims.csv's numerator and denominator roles)."""
    from ..report.claims import load_claims
    out = {}
    for claim in load_claims(run.manifest["experiment"]).iter_rows(named=True):
        roles = f"{claim.get('numerator_role') or ''}|{claim.get('denominator_role') or ''}"
        out[claim["id"]] = [r.strip() for r in roles.split("|") if r.strip()]
    return out


def not_judged(run, roles: list[str] | None, found: dict[str, list[dict]]) -> str | None:
    """Why a claim comparing these roles is not judged: a system it compares is a sharded one whose
    load sat on fewer shards than the cluster has (None when no such system plays its roles; a claim
    whose roles are unknown compares every complete system)."""
    systems = [s for s in run.complete_systems if not roles or any(run.plays(s, role) for role in roles)]
    hits = [unspread_text(s["label"], item) for s in systems for item in found.get(s["label"], [])]
    return "not judged: " + "; ".join(hits) if hits else None


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
