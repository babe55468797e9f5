"""``python -m vkbench`` is the same as the ``vkbench`` command."""

from .cli import main

main()
