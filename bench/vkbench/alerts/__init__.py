"""Alerts: the job-summary Markdown and one GitHub issue per regression incident."""

from .summary import render_summary

__all__ = ["render_summary"]
