"""`make all CLUSTER=<address>`: the collection's experiments sent to a Dask cluster
(docs/cluster.md).

The unit a host receives is one whole experiment run, every system one after another on that
machine, so each ratio a claim takes is measured on one machine; repeats of an experiment go to
different hosts where there are several. A host runs one unit at a time: its worker declares the
resource RESOURCE once and every unit asks for all of it.

- host.py: what runs on a host (set itself up once, run the experiment, hand back its folder);
- transfer.py: a run folder packed on a host and unpacked here, or copied to a shared folder;
- placement.py: which waiting unit a free host takes;
- ledger.py: each unit's outcome, kept as it changes;
- submit.py: the submitting side, from the checks before anything starts to the collection page.
"""

RESOURCE = "enginebench"
