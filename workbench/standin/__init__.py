"""Stand-ins for what the serving image runs against on an instance, so its own code can run here as
real processes: a vLLM stand-in engine (`python -m workbench.standin.engine serve ...`), `vllm` and `nvidia-smi`
test doubles (fakes/), and the harness that starts the supervisor or the engine with the environment
the stacks set. Used by the container tests, the sandbox and the benchmarks; never in the image."""
