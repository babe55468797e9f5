"""Result files: the versioned JSON schema, validation, atomic writes, summaries."""

from .io import load_result, result_files, validate_result, write_json_atomic, write_result

__all__ = ["load_result", "result_files", "validate_result", "write_json_atomic", "write_result"]
