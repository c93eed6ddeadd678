"""LinkBench's ten operations as Store calls, with the MySQL reference semantics for counts.

LinkbenchX's MongoDB store lost count updates (a replacement upsert and a duplicated `$inc` key,
spec §4.2-4.3); here ADD_LINK, UPDATE_LINK and DELETE_LINK change the count exactly as
LinkStoreMysql does, inside one transaction where the store supports it.
"""
from __future__ import annotations

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


def add_link(store: Store, link: dict) -> int:
    """ADD_LINK and UPDATE_LINK (LinkBench calls addLink for both). Returns 1 if a link was
    created or made visible (the count changed), else 0."""
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


def delete_link(store: Store, id1: int, link_type: int, id2: int, now_ms: int) -> int:
    """DELETE_LINK without expunge: hide a visible link and decrement its count."""
    def body():
        before = store.get(LINK, LINK_PK.name, (link_type, id1, id2))
        if before is None or before["visibility"] != VISIBLE:
            return 0
        store.update(LINK, None, (before["_id"],), set={"visibility": HIDDEN})
        _change_count(store, id1, link_type, -1, now_ms)
        return 1
    return store.run_in_transaction(body)


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
