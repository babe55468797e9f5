"""``vkbench ci ...``: the GitHub workflows' steps as library commands (one module per command).

The workflows and tools/ci/*.sh call these in one line; the decisions (input checks, plan checks)
live here, in Python with unit tests, not in shell. :mod:`.actions` is what every step shares:
step outputs, the job summary and ``::error::`` annotations, each also usable outside GitHub
Actions (stdout instead of the files GitHub names).
"""
