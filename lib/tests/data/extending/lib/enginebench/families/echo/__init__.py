from .params import Params  # noqa: F401
