"""The docs walk (`make docs-walk`, issue 40): every command README.md and docs/ print, run as printed in a fresh
copy of the repository against a fresh sandbox of its own, each long one also interrupted once with SIGINT.

It fails on a traceback, raw HTML, an exit status other than the one the walk expects, or a figure in the docs
that the code or config contradicts (tools/doc_figures.py), and prints a summary table (command, exit, seconds).
`--write` (`make docs`) puts the normalised transcripts into docs/operations.md between their markers.

tree.py     the fresh copy (tracked files of the checkout, the shared toolchain linked, its own `.sandbox/`)
steps.py    what is walked, in order, and what is not (each with its reason)
run.py      running one step: output, exit status, wall and CPU seconds, Ctrl-C
findings.py what makes a step fail
transcript.py  normalising the output and writing it between the docs' markers
"""
