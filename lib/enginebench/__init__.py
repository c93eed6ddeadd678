"""enginebench: re-running the classic MongoDB storage-engine studies, claim by claim.

    import enginebench
    folder = enginebench.run("linkbench_cached", scale="smoke")   # a results folder
"""
__version__ = "0.1.0"


def run(exp: str, scale: str = "default", target: str = "auto"):
    """Run an experiment and return its results folder (see enginebench.driver)."""
    from .driver import run as _run
    return _run(exp, scale, target)
