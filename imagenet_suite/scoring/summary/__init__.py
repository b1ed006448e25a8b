"""Across reports: one model's headline numbers (suite: QUBA dimensions, mCE, NINCO, ReaL, ASMA, LCA;
reading a suite.json back) and many models ranked (leaderboard)."""
