"""Measurements, not tests: each module runs from the repository root as `.venv/bin/python -m workbench.benchmarks.NAME`."""
