"""`python -m kubesim --port 0 --kubeconfig PATH [--state-dir DIR] [--insecure]`: serve until SIGINT/SIGTERM.

HTTPS with the simulator's own CA and an admin token, both written into the kubeconfig, and RBAC; plain
HTTP without authentication only with `--insecure`.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from pathlib import Path
from types import FrameType

from kubesim.kubelet.process.runtime import HostService
from kubesim.podsecurity.config import ConfigError, PodSecurityConfig, load_admission_configuration
from kubesim.processes import ProcessOptions
from kubesim.simulator import Simulator


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m kubesim", description="A Kubernetes API simulator on 127.0.0.1."
    )
    parser.add_argument("--port", type=int, default=0, help="port to listen on (0 picks a free one)")
    parser.add_argument("--kubeconfig", type=Path, required=True, help="where to write a kubeconfig for it")
    parser.add_argument(
        "--state-dir", type=Path, default=None, help="keep objects across restarts in this directory"
    )
    parser.add_argument(
        "--bookmark-interval", type=float, default=5.0, help="seconds between watch BOOKMARKs"
    )
    parser.add_argument("--event-log-size", type=int, default=10_000, help="watch events kept for resuming")
    parser.add_argument(
        "--namespace",
        action="append",
        default=[],
        dest="namespaces",
        metavar="NAME",
        help="create this namespace at start unless it exists (repeatable)",
    )
    parser.add_argument(
        "--insecure",
        action="store_true",
        help="plain HTTP, no authentication or authorization (the default is HTTPS + tokens + RBAC)",
    )
    parser.add_argument(
        "--anonymous", action="store_true", help="treat requests without credentials as system:anonymous"
    )
    parser.add_argument("--no-kubelet", action="store_true", help="do not run pods (no simulated kubelet)")
    parser.add_argument("--no-argo", action="store_true", help="do not run Argo Workflows")
    parser.add_argument(
        "--run-processes",
        type=Path,
        default=None,
        metavar="DIR",
        help="run pods' containers as local processes (the process kubelet), keeping their files under DIR",
    )
    parser.add_argument(
        "--image-map",
        type=Path,
        default=None,
        metavar="FILE",
        help="the process kubelet's image map (default DIR/image-map.yaml, written with defaults if missing)",
    )
    parser.add_argument(
        "--expose-host",
        action="append",
        default=[],
        metavar="NAMESPACE/NAME:PORT=HOST:PORT",
        help="a Service process pods reach that is served on this machine (repeatable), e.g. "
        "argoml/argoml-webhooks:443=127.0.0.1:8443",
    )
    parser.add_argument(
        "--mask",
        action="append",
        type=Path,
        default=[],
        metavar="PATH",
        help="a host path no process pod may read (repeatable; the dev stack masks its .dev directory)",
    )
    parser.add_argument(
        "--webhook-service",
        action="append",
        default=[],
        metavar="NAMESPACE/NAME[:PORT]=HOST:PORT",
        help="where an admission webhook's service listens (repeatable), e.g. argoml/webhooks=127.0.0.1:8443",
    )
    parser.add_argument(
        "--admission-control-config-file",
        type=Path,
        default=None,
        metavar="FILE",
        help="an AdmissionConfiguration; its PodSecurity plugin entry sets default levels and exemptions",
    )
    return parser.parse_args(argv)


def _pod_security(path: Path | None) -> PodSecurityConfig | None:
    if path is None:
        return None
    try:
        return load_admission_configuration(path)
    except (OSError, ConfigError) as error:
        raise SystemExit(f"--admission-control-config-file: {error}") from None


def _processes(arguments: argparse.Namespace) -> ProcessOptions | None:
    root = arguments.run_processes
    if root is None:
        return None
    root = root.resolve()
    return ProcessOptions(
        root=root,
        image_map=(arguments.image_map or root / "image-map.yaml").resolve(),
        base=Path.cwd(),
        masked_paths=tuple(str(path.resolve()) for path in arguments.mask),
        exposed=tuple(_exposed(route) for route in arguments.expose_host),
    )


def _exposed(route: str) -> HostService:
    service, _, address = route.partition("=")
    namespace, _, name = service.partition("/")
    name, _, port = name.partition(":")
    host, _, host_port = address.rpartition(":")
    if not (namespace and name and port.isdigit() and host and host_port.isdigit()):
        raise SystemExit(f"--expose-host {route!r}: expected NAMESPACE/NAME:PORT=HOST:PORT")
    return HostService(namespace, name, int(port), host, int(host_port))


def _route_webhooks(simulator: Simulator, routes: list[str]) -> None:
    for route in routes:
        service, _, address = route.partition("=")
        namespace, _, name = service.partition("/")
        name, _, port = name.partition(":")
        if not (namespace and name and address):
            raise SystemExit(f"--webhook-service {route!r}: expected NAMESPACE/NAME[:PORT]=HOST:PORT")
        simulator.webhooks.route_service(namespace, name, address, int(port or 443))


def main(argv: list[str] | None = None) -> int:
    arguments = _arguments(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    simulator = Simulator(
        port=arguments.port,
        state_dir=arguments.state_dir,
        kubeconfig_path=arguments.kubeconfig,
        bookmark_interval=arguments.bookmark_interval,
        event_log_size=arguments.event_log_size,
        kubelet=not arguments.no_kubelet,
        argo=not arguments.no_argo,
        namespaces=arguments.namespaces,
        https=not arguments.insecure,
        auth=not arguments.insecure,
        anonymous=arguments.anonymous,
        pod_security=_pod_security(arguments.admission_control_config_file),
        processes=_processes(arguments),
    )
    _route_webhooks(simulator, arguments.webhook_service)
    simulator.start()

    def stop(_signal: int, _frame: FrameType | None) -> None:
        simulator._stopping.set()

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    print(f"listening on {simulator.url}", flush=True)
    simulator.serve_forever()
    simulator.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
