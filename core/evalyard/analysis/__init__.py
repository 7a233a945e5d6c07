"""The statistics: pure functions over rows and values, with no store and no application.

``stats`` (summaries, the one bootstrap, t and clustered intervals, Holm), ``agreement`` (a
scorer against human labels), ``calibration`` (what a run shows of a saved calibration, the
calibrate report), ``comparison`` (two runs case by case), ``clustering`` (cluster-robust
figures), ``pairwise`` (a pairwise judge's A/B), ``labels`` (which cases to label), ``reviews``
(people's side-by-side verdicts: win rate, position bias), ``raters`` (agreement among several
raters: Cohen, Fleiss, Krippendorff) and ``ranking`` (Bradley-Terry over several systems). They are
fed rows by the store's named queries (``evalyard.store``) and joined to those queries by
``evalyard.figures`` (and, where a figure needs a run, the application's ``evalyard.services``); a
test holds them to importing neither.
"""
