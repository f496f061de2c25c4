"""MangaAssist's serving layer for vLLM on SageMaker.

Inside the image this directory is the top-level package `serving` (run as `python -m serving.supervisor`);
in the repository it is `container.serving`. Modules import each other relatively so both work.
"""
