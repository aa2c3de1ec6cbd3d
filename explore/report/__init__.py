"""The study report (``sparsepe report``): :mod:`explore.report.build` builds and writes it
(``write_report``), one module per section beside it. The package itself imports nothing, so
reading a stored study (:mod:`explore.report.data`) does not load the plotting stack."""
