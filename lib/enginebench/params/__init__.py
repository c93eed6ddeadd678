from .loader import ParamsError, experiments, load_params
from .schema import SCALES

__all__ = ["ParamsError", "experiments", "load_params", "SCALES"]
