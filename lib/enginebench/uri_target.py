"""What a run on TARGET=uri changes in its params before anything starts.

The deployment at the URI is one server, chosen, configured and limited by someone else. The
params' systems differ in their engines and engine options, which that server set for itself, so
run as written they would measure the same server several times under different labels and
compare it with itself. Here they become the one system (two for Flashback: a recorder and a
replayer) the server can be, labelled by the name the server gives itself; the limits meant for
a launched server are dropped, since applied here they would limit its client; and a cold start,
which needs a restart, is refused.
"""
from __future__ import annotations

import re

from .families import family

# The label of a server that would not say its name before authentication (serverStatus refused).
UNNAMED = "server"


def prepare(params: dict, server_process: str | None) -> list[str]:
    """Apply the three changes to `params` in place; the banner lines that say so."""
    refuse_cold_start(params)
    return without_limits(params) + one_server(params, server_process)


def refuse_cold_start(params: dict) -> None:
    """A cold start restarts the server so that its own cache goes with it; a deployment at the
    URI was not launched by this run and cannot be restarted from here, so its caches would stay
    warm while the params say nothing is in memory. Refused before anything starts."""
    method = params["phases"].get("cold_start", "none")
    if method != "none":
        raise ValueError(f"{params['params_file']}: phases.cold_start is {method!r}, but TARGET=uri cannot restart "
                         "the deployment at the URI, so its caches would stay warm; allowed there: 'none' (measure "
                         "it warm: SET=phases.cold_start=none), or TARGET=mongod for a server this run launches")


def without_limits(params: dict) -> list[str]:
    """The server behind the URI is not this machine's to limit; applied here, the params' memory
    and storage limits would have limited the runner, its client. They are dropped from the
    run's params, and the banner says which were."""
    memory = params["resources"]["memory"].get("limit_mb")
    storage = params["resources"]["storage"].get("profile")
    per_system = sorted({s["memory_limit_mb"] for s in params["systems"] if s.get("memory_limit_mb")})
    params["resources"] = {"memory": {"limit_mb": None, "enforce": "best_effort"},
                           "storage": {"profile": "none", "scale": 1.0, "during_load": True}}
    for system in params["systems"]:
        system["memory_limit_mb"], system["memory_own_mb"] = None, 0
    dropped = ([f"memory {memory} MB"] if memory else []) + ([f"storage profile {storage}"] if storage not in (None, "none") else [])
    dropped += [f"per-system memory {', '.join(str(m) for m in per_system)} MB"] if per_system else []
    if not dropped:
        return []
    return [f"TARGET=uri: the params' limits ({'; '.join(dropped)}) were not applied: the server behind the URI is "
            "not this machine's to limit, and applied here they would have limited its client."]


def server_label(process: str | None) -> str:
    """A system label from serverStatus.process ('mongod', 'ferretdb', 'mongo-java-server 1.47.0
    (H2 MVStore backend)'): its first word, in the characters a results folder takes."""
    word = (process or "").split(" ")[0].lower()
    return re.sub(r"[^a-z0-9._-]", "-", word).strip("-.") or UNNAMED


def one_server(params: dict, server_process: str | None) -> list[str]:
    """Keep the first system(s) the family needs on one server, relabelled by the server's name;
    the banner line naming what was folded into it."""
    systems = params["systems"]
    keep = family(params["workload"]["name"]).systems_on_one_server(params["workload"])
    name = server_label(server_process)
    kept = systems[:keep]
    labels = [name] + [f"{name}.{i + 1}" for i in range(1, len(kept))]
    folded = [s["label"] for s in systems]
    params["systems"] = [{**s, "label": label, "params_label": s["label"]} for s, label in zip(kept, labels)]
    what = (f"one system, {labels[0]}," if len(kept) == 1 else
            f"{len(kept)} systems ({', '.join(labels)}: the recorder, then its replay),")
    return [f"TARGET=uri: the params' systems ({', '.join(folded)}) differ only in engines and engine options, which "
            f"the server at the URI ({server_process or 'it did not name itself'}) set for itself; run as written "
            f"they would measure that server {len(folded)} times and compare it with itself. It ran as {what} with the "
            "workload they share."]
