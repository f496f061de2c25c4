#!/bin/sh
# Test double for the `vllm` CLI: runs the stand-in engine with the arguments the supervisor generated.
# The harness links it onto PATH as `vllm`; STANDIN_PYTHON names the interpreter that has the test dependencies.
exec "${STANDIN_PYTHON:?STANDIN_PYTHON is not set}" -m workbench.standin.engine "$@"
