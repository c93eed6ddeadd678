"""Flashback: record a workload's operations, then replay them against other systems (seed 003).

One small module per job:
  format          the versioned ops file (JSON lines, MongoDB Extended JSON): header, reader, writer
  commands        a Store call as the MongoDB command it stands for (filters, sorts, hints)
  capture_store   capture the Store-level operation stream of any run (works on embedded engines)
  capture_mongo   capture from a MongoDB deployment: profiler (level 2) plus oplog inserts
  execute_store   run a captured op through the Store interface
  execute_mongo   run a captured op as the pymongo command it was
  replay          the schedule: `real` (original inter-arrival times / speed-up) or `stress`, N workers
  appmix          the bundled application-like workload, for users with no capture of their own
  workload        the flashback_replay experiment: record on the first system, replay on the others

The ops file format is specified in format.py's docstring (README: Flashback).
"""
