"""Pictures and Markdown: plots (reliability diagram, shape bias per category, OOD FPR per group, the
suite's bars) and suite_markdown (suite.md)."""
