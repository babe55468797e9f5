"""Benchmark matrices: YAML files (or shipped presets) that expand into cells."""

from .model import Cell, MatrixFile
from .expand import expand_matrix, load_matrix

__all__ = ["Cell", "MatrixFile", "expand_matrix", "load_matrix"]
