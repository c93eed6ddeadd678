from .workload import LinkBench, Params, build

__all__ = ["LinkBench", "Params", "build"]
