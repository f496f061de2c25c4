"""Command-line programs of the repository's workflow (`make deploy`, `make pin-base-image`), run as
`python -m tools.<name>`. The rules they apply live in libraries (config/, ...); these modules parse
arguments, print and choose the exit code."""
