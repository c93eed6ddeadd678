"""LinkBench's ten operations as Store calls, in two count semantics (the `counts` param):

- `exact`: MySQL's reference semantics (LinkStoreMysql): ADD_LINK, UPDATE_LINK and DELETE_LINK
  change the link and its count in one transaction where the store supports it;
- `linkbenchx`: what LinkbenchX's MongoDB store did against MongoDB 3.x (Percona-Lab/linkbenchX at
  84aeea1, src/main/java/com/percona/LinkBench/LinkStoreMongoDBv2.java, addLinkImpl /
  deleteLinkImpl / addLinksNoCount / addBulkCountsImpl): the post's transaction_support_level=1 asks
  for TokuMX's MVCC transactions (Config.java: MVCC = 1, SIMULATED = 2), which MongoDB 3.x refuses,
  so nothing wraps the writes. Separate round trips: an upsert of the link by primary key, a
  replacement upsert of the count document, and a `$inc` whose second put() overwrote the first,
  so an existing count loses its `count` field (spec §4.2-4.3); the load upserts links and
  replaces counts (replaceOne, upsert). The consistency check reports the mismatches this leaves,
  as the post warned.
The native runner implements the same calls (lib/native/src/workloads/linkbench/ops.rs).
"""
from __future__ import annotations

import time

from bson import ObjectId

from ...stores.base import IndexSpec, Store

NODE, LINK, COUNT = "node", "link", "count"
LINK_PK = IndexSpec("link_pk", (("link_type", 1), ("id1", 1), ("id2", 1)), unique=True)
# A copy of MySQL's covering id1_type key, as LinkbenchX created it.
LINK_LIST = IndexSpec("id1_type", (("id1", 1), ("link_type", 1), ("visibility", 1), ("time", 1),
                                   ("id2", 1), ("version", 1), ("data", 1)))
COUNT_PK = IndexSpec("count_pk", (("id", 1), ("link_type", 1)), unique=True)

NODE_TYPE = 2048
VISIBLE, HIDDEN = 1, 0
RANGE_LIMIT = 10000
MAX_TIME = (1 << 63) - 1


def create_schema(store: Store) -> None:
    for name in (NODE, LINK, COUNT):
        store.create_collection(name)
    store.create_index(LINK, LINK_PK)
    store.create_index(LINK, LINK_LIST)
    store.create_index(COUNT, COUNT_PK)


def _change_count(store: Store, id1: int, link_type: int, delta: int, now_ms: int) -> None:
    """MySQL: INSERT counttable ... ON DUPLICATE KEY UPDATE count=count+delta, version=version+1."""
    found = store.get(COUNT, COUNT_PK.name, (id1, link_type))
    if found is None:
        store.insert_many(COUNT, [{"_id": ObjectId(), "id": id1, "link_type": link_type,
                                   "count": max(delta, 0), "time": now_ms, "version": 0}])
        return
    new_count = max(found.get("count", 0) + delta, 0)  # IF(count=0, 0, count-1) for deletes
    store.update(COUNT, None, (found["_id"],), set={"count": new_count, "time": now_ms},
                 inc={"version": 1})


def add_link(store: Store, link: dict, counts: str = "exact") -> int:
    """ADD_LINK and UPDATE_LINK (LinkBench calls addLink for both). Returns 1 if a link was
    created or made visible (the count changed), else 0 (linkbenchx: 1 if it was created)."""
    if counts == "linkbenchx":
        return _add_link_linkbenchx(store, link)

    def body():
        key = (link["link_type"], link["id1"], link["id2"])
        before = store.get(LINK, LINK_PK.name, key)
        if before is None:
            store.insert_many(LINK, [{"_id": ObjectId(), **link}])
            delta = 1
        else:
            store.update(LINK, None, (before["_id"],),
                         set={"visibility": link["visibility"], "data": link["data"],
                              "time": link["time"], "version": link["version"]})
            delta = 1 if before["visibility"] == HIDDEN and link["visibility"] == VISIBLE else 0
        if delta:
            _change_count(store, link["id1"], link["link_type"], delta, link["time"])
        return delta
    return store.run_in_transaction(body)


def _link_fields(link: dict) -> dict:
    return {"id1": link["id1"], "id2": link["id2"], "link_type": link["link_type"], "data": link["data"],
            "time": link["time"], "version": link["version"]}


def _link_upsert(link: dict) -> tuple[tuple, dict]:
    """addLinksNoCount's upsert of one link: its primary key, and the update() arguments."""
    return ((link["link_type"], link["id1"], link["id2"]),
            {"set_on_insert": _link_fields(link), "set": {"visibility": link["visibility"]}})


def upsert_link(store: Store, link: dict) -> int:
    """LinkbenchX's addLinksNoCount for one link: the upsert by primary key. 1 if it inserted,
    2 if the link existed (getN() is 1 and isUpdateOfExisting() adds one)."""
    key, arguments = _link_upsert(link)
    return 1 if store.update(LINK, LINK_PK.name, key, upsert=True, **arguments).upserted else 2


def load_links(store: Store, links: list[dict]) -> int:
    """LinkbenchX's load of a batch of links (addBulkLinks): one unordered bulk of upserts."""
    return store.upsert_many(LINK, LINK_PK.name, [_link_upsert(link) for link in links])


def _now_ms() -> int:
    return int(time.time() * 1000)


def _add_link_linkbenchx(store: Store, link: dict) -> int:
    nrows = upsert_link(store, link)
    visible = link["visibility"] == VISIBLE
    update_count = (1 if visible else 0) if nrows == 1 else (1 if visible else -1)
    if update_count:
        key = (link["id1"], link["link_type"])
        # countColl.update(countKey, {id, link_type, time}, upsert): a replacement.
        replaced = store.update(COUNT, COUNT_PK.name, key, upsert=True,
                                replace={"id": link["id1"], "link_type": link["link_type"], "time": _now_ms()})
        # The second put("$inc", ...) replaces the first: an existing count gets version only.
        inc = {"version": 1} if replaced.matched else {"count": 0 if update_count < 0 else 1}
        store.update(COUNT, COUNT_PK.name, key, inc=inc)
    if nrows == 2:
        store.update(LINK, LINK_PK.name, (link["link_type"], link["id1"], link["id2"]),
                     set={"visibility": link["visibility"], "data": link["data"], "time": link["time"],
                          "version": link["version"]})
    return int(nrows == 1)


def load_counts(store: Store, rows: list[dict]) -> int:
    """LinkbenchX's load of a batch of count rows (addBulkCounts): one unordered bulk of
    replaceOne upserts by (id, link_type)."""
    return store.upsert_many(COUNT, COUNT_PK.name, [
        ((row["id"], row["link_type"]), {"replace": {"id": row["id"], "link_type": row["link_type"],
                                                     "count": row["count"], "time": row["time"], "version": 0}})
        for row in rows])


def delete_link(store: Store, id1: int, link_type: int, id2: int, now_ms: int, counts: str = "exact") -> int:
    """DELETE_LINK without expunge: hide a visible link and decrement its count."""
    if counts == "linkbenchx":
        return _delete_link_linkbenchx(store, id1, link_type, id2)

    def body():
        before = store.get(LINK, LINK_PK.name, (link_type, id1, id2))
        if before is None or before["visibility"] != VISIBLE:
            return 0
        store.update(LINK, None, (before["_id"],), set={"visibility": HIDDEN})
        _change_count(store, id1, link_type, -1, now_ms)
        return 1
    return store.run_in_transaction(body)


def _delete_link_linkbenchx(store: Store, id1: int, link_type: int, id2: int) -> int:
    before = store.get(LINK, LINK_PK.name, (link_type, id1, id2))
    if before is None or before["visibility"] == HIDDEN:
        return 0
    store.update(LINK, None, (before["_id"],), set={"visibility": HIDDEN})
    key = (id1, link_type)
    replaced = store.update(COUNT, COUNT_PK.name, key, upsert=True,
                            replace={"id": id1, "link_type": link_type, "time": _now_ms()})
    store.update(COUNT, COUNT_PK.name, key, inc={"version": 1 if replaced.matched else 0})
    if replaced.matched:  # fix up negative counts
        store.update(COUNT, COUNT_PK.name, key, set={"count": 0}, where={"count": {"$lt": 0}})
    store.get(COUNT, COUNT_PK.name, key)  # to learn the count's _id, as it did
    return 1


def count_links(store: Store, id1: int, link_type: int) -> int:
    found = store.get(COUNT, COUNT_PK.name, (id1, link_type))
    return 0 if found is None else found.get("count", 0)


def get_link_list(store: Store, id1: int, link_type: int, max_time: int = MAX_TIME,
                  offset: int = 0, limit: int = RANGE_LIMIT) -> list[dict]:
    """Visible links of (id1, type) newest first: the id1_type range scan."""
    return store.scan(LINK, LINK_LIST.name, (id1, link_type, VISIBLE), low=0, high=max_time,
                      reverse=True, skip=offset, limit=limit)


def multiget_links(store: Store, id1: int, link_type: int, id2s: list[int]) -> list[dict]:
    """MULTIGET_LINK: no visibility filter, as in MySQL and LinkbenchX."""
    return store.get_many(LINK, LINK_PK.name, (link_type, id1), id2s)


def add_node(store: Store, node: dict) -> int:
    return store.insert_many(NODE, [node])


def update_node(store: Store, node_id: int, version: int, time_s: int, data: bytes) -> int:
    result = store.update(NODE, None, (node_id,), set={"version": version, "time": time_s, "data": data},
                          where={"type": NODE_TYPE})
    return int(result.matched)


def delete_node(store: Store, node_id: int) -> int:
    return int(store.delete(NODE, None, (node_id,), where={"type": NODE_TYPE}))


def get_node(store: Store, node_id: int) -> dict | None:
    node = store.get(NODE, None, (node_id,))
    return node if node is not None and node.get("type") == NODE_TYPE else None
