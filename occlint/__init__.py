"""occlint: a CUDA occupancy linter."""

__version__ = "0.1.0"
