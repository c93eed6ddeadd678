"""enginebench: re-running the classic MongoDB storage-engine studies, claim by claim."""
__version__ = "0.1.0"
