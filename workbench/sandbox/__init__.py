"""A local AWS (moto) seeded like a deployed environment, for trying the ops CLI: `make sandbox`."""
