"""``python -m ragtriage.cli``: the same command as the ``ragtriage`` script."""

from ragtriage.cli import main

main()
