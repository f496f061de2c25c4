"""The steps `make synth`, `make deploy` and `make bootstrap` run around the CDK CLI."""
