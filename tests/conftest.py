"""Every test runs Node from the pinned toolchain (config/toolchain.py), also when pytest is started
without make: set before any test module imports aws_cdk."""

from config.toolchain import use_pinned_node

use_pinned_node()
