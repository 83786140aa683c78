"""What the TUI shows, read in worker threads: typed reads over the core functions imported directly (no textual,
no SQL in ``tui/``, no figure computed here).

Each read takes a DuckDB cursor (one per worker thread) and returns an Arrow table whose columns are named here,
or a small dataclass. The core's answers have declared columns (``classify.failures``, ``checks.leakage``,
``metrics.per_case``, ``metrics.slices``, ``gate.compare.paired_matrix``); :func:`~.reads.require` checks the
ones read here, so a changed core schema is a clear message, not a guessed column. A core error is raised as
:class:`~.reads.ViewError` with the core's words, which the view prints in place of its table.

By what each module serves: ``reads`` (store access, the session cache of whole-run answers, shared helpers),
``lists`` (overview and list views), ``compare`` (the Compare view), ``case`` (one case in full), ``state`` (the
store's runs before a view opens, the notes watch). Import a name from the module that defines it.
"""
