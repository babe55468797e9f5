"""Topologies (standalone, cluster:N[:R], replication:R) and the backends that start them.

``model.py`` is the single source of truth for what each server is started with; the native
backend (``native.py``) and the compose backend (``compose.py``) both render it.
"""

from .model import NodeSpec, Topology, server_config

__all__ = ["NodeSpec", "Topology", "server_config"]
