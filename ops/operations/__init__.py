"""What the ops commands run: library functions taking clients, a config and a Console. Never imports ops.commands."""
