"""The context a reader needs before the numbers: the post's scale against this run's, the
post's engine ratios against ours, and each engine's settings. One import for the notebooks."""
from .engine_table import engine_configuration
from .normalised import normalised_view
from .scale import scale_mapping

__all__ = ["engine_configuration", "normalised_view", "scale_mapping"]
