"""Pictures, Markdown and pages: plots (reliability diagram, shape bias per category, OOD FPR per group, the
suite's bars), figure_files (a figure saved as PNG, drawn once), suite_markdown (suite.md), html (self-contained
pages; shading: table cells shaded by value), html_run (report.html), html_leaderboard (leaderboard.html) and
figures/ (the leaderboard's figures, one module per paper)."""
