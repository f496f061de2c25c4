"""The sandbox's long-running process: a moto server seeded like a deployed environment, one model
server per variant (the serving image's supervisor and middleware in front of the project's vLLM
stand-in), an EMF agent per model server that turns its metric lines into CloudWatch metrics, and the
runtime API in front of them. Started and stopped by `python -m workbench.sandbox`.

moto runs in this process (ThreadedMotoServer), so its backends are this process's: that is how the
moto quirks the CLI cannot go around (workbench/sandbox/moto_fixes.py: ml.g5.* refused, weights reset by an
instance-count change) are lifted for this server only.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import boto3
import httpx

from workbench.standin.harness import free_port, model_tree, serving_env, start_supervisor

if TYPE_CHECKING:
    from config import EnvironmentConfig

REPO = Path(__file__).resolve().parent.parent.parent
CREDENTIALS = {"aws_access_key_id": "sandbox", "aws_secret_access_key": "sandbox"}
PATIENCE_SECONDS = 60.0


@dataclass(frozen=True)
class State:
    """What `start` prints and `stop` needs; written once everything answers."""

    pid: int
    env: str
    region: str
    account: str
    moto_url: str
    runtime_url: str
    endpoint: str
    model_urls: dict[str, str] = field(default_factory=dict)  # variant -> its model server
    started_at: str = ""  # UTC, ISO 8601: a reused sandbox says how old its state is

    def exports(self) -> dict[str, str]:
        return {
            "AWS_ENDPOINT_URL": self.moto_url,
            # botocore's service-specific override (service id "SageMaker Runtime"): invocations go to
            # the sandbox's runtime front instead of moto.
            "AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME": self.runtime_url,
            "AWS_ACCESS_KEY_ID": CREDENTIALS["aws_access_key_id"],
            "AWS_SECRET_ACCESS_KEY": CREDENTIALS["aws_secret_access_key"],
            "AWS_REGION": self.region,
        }

    def session(self) -> boto3.Session:
        """A boto3 session on the sandbox's credentials and region (clients still need `endpoint_url`)."""
        return boto3.Session(region_name=self.region, **CREDENTIALS)

    def save(self, path: Path) -> None:
        """Whole or not at all: `start` reads the file as soon as it exists (written, then renamed into place;
        a reader of a half-written file failed `make sandbox-reset` with a JSONDecodeError, found by the docs walk)."""
        partial = path.with_name(f".{path.name}.partial")
        partial.write_text(json.dumps(asdict(self), indent=2) + "\n")
        partial.replace(path)

    @classmethod
    def load(cls, path: Path) -> State:
        return cls(**json.loads(path.read_text()))


def wait_until(ready: Any, what: str) -> None:
    deadline = time.monotonic() + PATIENCE_SECONDS
    while time.monotonic() < deadline:
        if ready():
            return
        time.sleep(0.2)
    raise RuntimeError(f"{what} did not come up within {PATIENCE_SECONDS:.0f} s")


def answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=1).status_code < 500
    except httpx.HTTPError:
        return False


def start_model_server(
    adapters: list[str], model: str, workdir: Path, endpoint: str, variant: str
) -> tuple[subprocess.Popen[bytes], str, Path]:
    """One variant's instance: the serving image's own code, as the container tests run it, the
    supervisor and our middleware with the vLLM stand-in behind a fake `vllm`. So the runtime front
    talks to what an instance runs (for example, an adapter named only in the body is served because
    our middleware routes it; the stand-in alone, like vLLM's /invocations, would answer with the base
    model), and its EMF lines carry the variant's dimensions. `model` is the config's model name; the
    container serves the base model as `base` whatever it is. Returns the process, its URL, its log."""
    port = free_port()
    shutil.rmtree(workdir / "model", ignore_errors=True)  # left by an earlier sandbox: a restart starts clean
    model_tree(workdir / "model", tuple(adapters))
    env = serving_env(
        workdir,
        port,
        SERVING_LORA_ADAPTERS=",".join(adapters),
        SERVING_ENDPOINT_NAME=endpoint,
        SERVING_VARIANT_NAME=variant,
        SERVING_MODEL_VERSION=f"sandbox-{model}",
        STANDIN_TOKEN_INTERVAL="0.002",
    )
    (workdir / "state").mkdir(parents=True, exist_ok=True)
    supervisor = start_supervisor(workdir, env)
    return supervisor.popen, f"http://127.0.0.1:{port}", supervisor.log_path


def image_resolver(templates: Path, env_name: str, account: str, region: str) -> Any:
    """The image template's resolver."""
    from config import naming
    from workbench.sandbox.seed import Resolver

    stack_name = naming.image_stack_name(env_name)
    template = json.loads((templates / f"{stack_name}.template.json").read_text())
    return Resolver(template, stack_name, account, region)


def resolvers(templates: Path, env_name: str, account: str, region: str, deployment: int) -> Any:
    """The serving template's resolver, its Fn::ImportValue answered from the image template's exports."""
    from config import naming
    from workbench.sandbox.seed import Resolver

    image = image_resolver(templates, env_name, account, region)
    serving_name = naming.serving_stack_name(env_name)
    template = json.loads((templates / f"{serving_name}.template.json").read_text())
    return Resolver(template, serving_name, account, region, image.exports(), deployment)


def redeploy(client: Any, templates: Path, state: State, deployment: int) -> str:
    """What `make deploy` does to a live endpoint, as far as the ops CLI can see: new models and endpoint
    config from the templates, the endpoint moved onto them keeping every variant's weights and instance
    counts (RetainAllVariantProperties), the stack's outputs updated. moto has no UpdateEndpoint
    (NotImplementedError), so the endpoint is moved in moto's backend, which lives in this process."""
    from moto.sagemaker.models import sagemaker_backends

    from workbench.sandbox.seed import create_models_and_config, push_model_images, record_stack

    resolve = resolvers(templates, state.env, state.account, state.region, deployment)
    push_model_images(client("ecr"), resolve)
    config_name = create_models_and_config(client("sagemaker"), resolve)
    backend = sagemaker_backends[state.account][state.region]
    endpoint = backend.endpoints[state.endpoint]
    retained = {v["VariantName"]: v for v in endpoint.production_variants}
    fresh = endpoint._process_production_variants(backend.endpoint_configs[config_name].production_variants)
    kept = ("CurrentWeight", "DesiredWeight", "CurrentInstanceCount", "DesiredInstanceCount")
    for variant in fresh:
        variant.update(
            {key: retained[variant["VariantName"]][key] for key in kept if variant["VariantName"] in retained}
        )
    endpoint.endpoint_config_name = config_name
    endpoint.production_variants = fresh
    record_stack(client("cloudformation"), resolve)
    return config_name


def start_model_servers(
    cfg: EnvironmentConfig, env_name: str, workdirs: Path
) -> dict[str, tuple[subprocess.Popen[bytes], str, Path]]:
    """Every variant's model server, each answering /ping: variant -> (process, URL, log)."""
    servers = {
        v.name: start_model_server(
            list(cfg.engine.adapters),
            cfg.engine.model,
            workdirs / f"{env_name}-{v.name}",
            cfg.endpoint_name,
            v.name,
        )
        for v in cfg.variants
    }
    for name, (_, url, _) in servers.items():
        wait_until(
            lambda url=url: answers(f"{url}/ping"), f"the {name} model server (supervisor, middleware, stand-in)"
        )
    return servers


def port_or_free(preferred: int) -> int:
    """`preferred` if nothing listens there (a reset keeps the address its variables were exported with)."""
    if preferred:
        try:
            with socket.socket() as sock:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind(("127.0.0.1", preferred))
            return preferred
        except OSError as error:
            print(f"port {preferred} is taken ({error}): listening on another", flush=True)
    return free_port()


def url_port(url: str) -> int:
    return int(url.rsplit(":", 1)[1]) if url else 0


def serve(env_name: str, templates: Path, state_path: Path, ports: tuple[int, int] = (0, 0)) -> None:
    """`ports`: the moto and runtime ports to keep, when free (0: any)."""
    from config import load_environment

    cfg = load_environment(env_name, against_deployed=False)
    region = cfg.region or "us-east-1"
    account = cfg.account or "123456789012"
    os.environ["MOTO_ACCOUNT_ID"] = account  # moto answers sts:GetCallerIdentity with the env's account
    from moto.server import ThreadedMotoServer

    from config import load_catalog
    from workbench.sandbox import account_answers, moto_fixes, scaling
    from workbench.sandbox.capture import DataCapture
    from workbench.sandbox.emf_agent import EmfAgent
    from workbench.sandbox.runtime import RuntimeFront
    from workbench.sandbox.seed import seed_bedrock_artifacts, seed_image_stack, seed_model_data, seed_serving_stack

    moto_fixes.apply()
    # A changed floor scales the variant and is recorded (workbench/sandbox/scaling.py).
    scaling.apply(dict(cfg.endpoint_instance_quotas), scaling.quota_file(state_path.parent, env_name))
    account_answers.apply(tuple(load_catalog().instance_types), scaling.quota)  # bin/ops preflight's answers
    port = port_or_free(ports[0])
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    moto.start()
    moto_url = f"http://127.0.0.1:{port}"
    session = boto3.Session(region_name=region, **CREDENTIALS)

    def client(service: str) -> Any:
        return session.client(service, endpoint_url=moto_url)

    seed_image_stack(client, image_resolver(templates, env_name, account, region))
    seed_serving_stack(client, resolvers(templates, env_name, account, region, 1))
    seed_bedrock_artifacts(client("s3"), region)
    seed_model_data(client("s3"), [v.model_data_s3_uri for v in cfg.variants], region)

    servers = start_model_servers(cfg, env_name, state_path.parent)
    model_urls = {name: url for name, (_, url, _) in servers.items()}
    agents = [EmfAgent(log, client("cloudwatch")) for _, _, log in servers.values()]
    for agent in agents:
        agent.start()
    deployments = [1]

    def deploy(new_templates: Path) -> str:
        deployments.append(len(deployments) + 1)
        return redeploy(client, new_templates, state, deployments[-1])

    capture = DataCapture(client("sagemaker"), client("s3"))
    front = RuntimeFront(model_urls, client("sagemaker"), client("cloudwatch"), deploy, capture, port_or_free(ports[1]))
    front.start()

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    state = State(
        os.getpid(), env_name, region, account, moto_url, front.url, cfg.endpoint_name, model_urls, started_at
    )
    state.save(state_path)
    processes = [process for process, _, _ in servers.values()]
    try:
        while not stop.is_set() and all(process.poll() is None for process in processes):
            stop.wait(0.5)
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(timeout=30)
        for agent in agents:
            agent.stop()
        front.stop()
        moto.stop()
        state_path.unlink(missing_ok=True)
