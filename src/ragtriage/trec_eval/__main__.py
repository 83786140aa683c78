"""``python -m ragtriage.trec_eval [flags] QRELS RUN``: the same command as ``ragtriage trec-eval``."""

import sys

from ragtriage.cli import trec_eval as _command  # noqa: F401  (registers the command)
from ragtriage.cli._app import app

app(["trec-eval", *sys.argv[1:]], prog_name="python -m ragtriage.trec_eval")
