"""Across reports: one model's headline numbers (suite: QUBA dimensions, mCE, NINCO, ReaL, ASMA, LCA; its
parts in reports, quba, imagenet_c and headlines), reading a suite.json back (suite_json, checked with
json_schema) and many models ranked (leaderboard), with one module per paper's tables (papers/), the model
groups of ``leaderboard --groups`` (groups) and the runs placed among a paper's published models with
``leaderboard --reference`` (reference_rows)."""
