"""The mongod target: find and identify binaries, build their options, launch deployments on
127.0.0.1 inside a system's resource profile, watch replication, and stop everything cleanly.

Modules, one job each:
  spec.py         the `mongod:` block of a system in the params (validated strictly)
  binary.py       discovery (params, MONGOD / MONGOS, PATH) and identification (`--version`, `--help`)
  options.py      one option builder per engine and version line -> argv / YAML / INI settings
  systems.py      how an experiment's systems map to mongod systems, checked before anything starts
  topology.py     standalone / replica set / sharded cluster plans: ports, dbpaths, argv (no launch)
  wire.py         a minimal command client for administering servers of any version
  launch.py       starting, initiating and stopping a planned deployment
  replication.py  replication lag per secondary and stale-secondary detection
  serverstats.py  serverStatus counters, dbStats and collStats for the results
  legacy.py       which executor (Rust driver or pymongo 3) and companion Python a server needs
  companion.py    server statistics and setup commands for the driver, in that Python
  legacy_executor.py  the runner's commands through pymongo 3, one process per worker
"""
