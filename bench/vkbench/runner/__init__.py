"""Running cells: deploy a topology, drive the benchmark tool, measure CPU, judge validity,
and assemble the versioned result file."""
