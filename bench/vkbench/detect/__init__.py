"""Statistical change-point detection over the results history (method: docs/detection.md).

Entry points: :func:`run_detection` (a whole history -> detect.json), :func:`detect_changes`
(one series of values), :func:`detect_csv` (the evaluation interface).
"""

from .changepoints import Change, detect_changes
from .csv_series import detect_csv
from .params import DetectionParams
from .runner import run_detection

__all__ = ["Change", "DetectionParams", "detect_changes", "detect_csv", "run_detection"]
