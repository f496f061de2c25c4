"""The workbench beside the product: it plans, measures, reviews and rehearses. It may import the
product (app, config, stacks, constructs, container, ops); the product never imports it."""
