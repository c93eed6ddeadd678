"""Store range arguments as MongoDB query filters, shared by MongoStore (which sends them) and
the Flashback capture (which records the command a mongod would have received)."""
from __future__ import annotations


def range_filter(fields: tuple[str, ...], prefix=(), low=None, high=None) -> dict:
    """Equality on the index's first fields (`prefix`), then bounds on the next: a scalar bound on
    that one field, a tuple bound (iibench's compound keys) over the fields after the prefix."""
    flt = dict(zip(fields, prefix))
    rest = fields[len(prefix):]
    # Bounds read back from an ops file arrive as JSON lists; they are the same tuples.
    low = tuple(low) if isinstance(low, list) else low
    high = tuple(high) if isinstance(high, list) else high
    if isinstance(low, tuple) or isinstance(high, tuple):
        clauses = [c for c in (tuple_bound(rest, low, "$gt", "$gte"), tuple_bound(rest, high, "$lt", "$lte")) if c]
        return {"$and": [flt, *clauses]} if flt else ({"$and": clauses} if len(clauses) > 1 else clauses[0])
    if low is not None or high is not None:
        bounds = {}
        if low is not None:
            bounds["$gte"] = low
        if high is not None:
            bounds["$lte"] = high
        flt[rest[0]] = bounds
    return flt


def tuple_bound(fields, bound, strict: str, inclusive: str) -> dict | None:
    """A tuple bound as iibench writes it: (a, b, c) >= (x, y, z) is
    {a: x, b: y, c: {$gte: z}} OR {a: x, b: {$gt: y}} OR {a: {$gt: x}}."""
    if bound is None:
        return None
    values = bound if isinstance(bound, tuple) else (bound,)
    clauses = []
    for depth in range(len(values), 0, -1):
        clause = dict(zip(fields[:depth - 1], values[:depth - 1]))
        clause[fields[depth - 1]] = {(inclusive if depth == len(values) else strict): values[depth - 1]}
        clauses.append(clause)
    return clauses[0] if len(clauses) == 1 else {"$or": clauses}


def update_document(set=None, inc=None, set_on_insert=None) -> dict:
    """A Store update's arguments as MongoDB update operators."""
    update = {}
    if set:
        update["$set"] = set
    if inc:
        update["$inc"] = inc
    if set_on_insert:
        update["$setOnInsert"] = set_on_insert
    return update
