"""The steps `make synth`, `make deploy` and `make bootstrap` run around the CDK CLI: checks before a
deploy, the record after it, the bootstrap's execution policies, the template lint."""
