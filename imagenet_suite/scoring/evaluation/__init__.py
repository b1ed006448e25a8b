"""The evaluator: which metrics apply to a built split and how they are computed from model outputs.

results (``MetricRow``, ``ScoreReport``), options (one frozen options type per family, gathered in
``ScoreOptions``), context (``EvaluationContext``), family (``MetricFamily``), report (``score``).
The families themselves are :mod:`imagenet_suite.scoring.families` (``FAMILIES``, the explicit list).
"""
