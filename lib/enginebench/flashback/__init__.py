"""Flashback: record a workload's operations, then replay them against other systems (seed 003).

  format          the versioned ops file (JSON lines, MongoDB Extended JSON): header, reader, writer
  capture_mongo   capture from a MongoDB deployment: profiler (level 2) plus oplog inserts

The bundled application mix, the recording of a run's own Store calls, the translation of mongod
captures and the replay itself are the native runner's (lib/native/src/workloads/flashback/); the
experiment's params are families/flashback. The ops file format is specified in format.py's
docstring (README: Flashback).
"""
