"""Across reports: one model's headline numbers (suite: QUBA dimensions, mCE, NINCO, ReaL, ASMA, LCA;
reading a suite.json back) and many models ranked (leaderboard), with one module per paper's tables
(papers/) and the model groups of ``leaderboard --groups`` (groups)."""
