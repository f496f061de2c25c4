"""What the ops commands run, and their AWS calls: each operation a library function taking
clients, a config and a Console (deploy, traffic, rollback_capacity, verify, status, ...), and what they
share (aws clients, errors and exit-code values, output, waiting, the runtime hook). Never imports
ops.commands, the command line on top of it."""
