"""Figures of stored runs: the store's named queries (``evalyard.store``) handed to the pure
statistics (``evalyard.analysis``), given a ``Store`` and nothing more.

``calibrations`` (a run's saved calibrations and its judges' agreement with people),
``comparisons`` (two runs case by case, a pairwise judge's A/B), ``clusters`` (a run's clustered
figures) and ``labels`` (people's labels and which cases to label next). They sit below the
application: the run service, the CLI and the sinks (the report, JUnit) read them without
importing it; what needs a run of its own planned and executed stays in ``evalyard.services``.
"""
