from .workload import LinkBench, LinkBenchConfig, OP_NAMES, LOAD_OPS

__all__ = ["LinkBench", "LinkBenchConfig", "OP_NAMES", "LOAD_OPS"]
