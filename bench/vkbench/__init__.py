"""vkbench: continuous benchmarking for Valkey.

The package is a library first; :mod:`vkbench.cli` is a thin click layer over it.
"""

__version__ = "0.1.0"

#: Version of the result file format written by this code (see results/schema/).
RESULT_SCHEMA_VERSION = 1
