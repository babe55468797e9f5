"""Exports of results for other tools."""
