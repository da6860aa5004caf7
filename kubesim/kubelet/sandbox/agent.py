"""The node agent: PID 1 of the node's user, pid, network and mount namespaces (started by host.Node).

It holds the bridge, starts each pod's pause process and each container's init, tracks their exit statuses,
and runs the node's listeners (Services, exposed host ports). Requests arrive one per connection on a unix
socket as JSON lines with descriptors beside them (protocol.py); a request that fails, however malformed,
gets an error answer and the agent carries on. When the kubelet's process ends, its end of the lifeline
pipe closes, the agent exits, and the kernel kills every process of the node with it.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import json
import os
import signal
import socket
import sys
import threading
import traceback
from collections.abc import Callable, Sequence
from typing import Any

from kubesim.kubelet.sandbox import boot, cgroup, fields, linux, network, relay
from kubesim.kubelet.sandbox.protocol import Channel, ProtocolError, close_all
from kubesim.kubelet.sandbox.reaper import Reaper

NAMESPACES = ("net", "uts", "ipc", "mnt")
CONTROL_TIMEOUT = 120.0  # a launcher building a root that mirrors large directories


class Process:
    """A container's init or an exec: what to signal, and its exit status once it has ended."""

    __slots__ = ("cgroup", "group", "id", "kind", "pod", "rlimit", "signal_pid", "status")

    def __init__(self, id: str, pod: str, kind: str) -> None:
        self.id, self.pod, self.kind = id, pod, kind
        self.cgroup: str | None = None  # the container's memory cgroup, which its execs join
        self.rlimit: int | None = None  # RLIMIT_AS where no cgroup is writable
        self.signal_pid: int | None = None  # a container's init; an exec's process (its launcher waits)
        self.group = kind == "exec"  # an exec's process leads a session: signal its whole group
        self.status: tuple[int, bool] | None = None


class Pod:
    __slots__ = ("address", "namespaces", "pause_ended", "pause_pid", "processes", "uid", "veth")

    def __init__(self, uid: str, address: str, veth: str) -> None:
        self.uid, self.address, self.veth = uid, address, veth
        self.pause_pid = 0
        self.pause_ended = False
        self.namespaces: dict[str, int] = {}
        self.processes: dict[str, Process] = {}


class Agent:
    def __init__(self, config: dict[str, Any], reaper: Reaper) -> None:
        self.config = config
        self.run_dir: str = config["run_dir"]
        self.network = network.parse_pod_cidr(config["pod_cidr"])
        memory = config.get("memory_cgroup")
        self.memory: tuple[int, str] | None = (memory[0], memory[1]) if memory else None
        self.reaper = reaper
        self.lock = threading.Lock()
        self.pods: dict[str, Pod] = {}
        self.processes: dict[str, Process] = {}
        self.pool = network.AddressPool(self.network)
        self.numbers = itertools.count(1)
        self.forwarders: dict[tuple[str, int], tuple[relay.Forwarder, relay.RoundRobin | None]] = {}
        self.added_addresses: set[str] = set()
        self._check_mounts()
        self._ip(["-batch", "-"], network.node_script(self.network))
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(config["socket"])
        os.chmod(config["socket"], 0o600)
        self.listener.listen(64)

    def _check_mounts(self) -> None:
        """Fails now, with one line, where containers' roots could not be built (Linux before 5.12)."""
        staging = os.path.join(self.run_dir, "root")
        linux.mount("none", "/", None, linux.MS_REC | linux.MS_PRIVATE)
        linux.mount("tmpfs", staging, "tmpfs", linux.MS_NOSUID | linux.MS_NODEV)
        try:
            linux.make_read_only(staging, recursive=True)
        except OSError as error:
            if error.errno == errno.ENOSYS:
                raise OSError("Linux 5.12 or later is needed (the mount_setattr system call)") from None
            raise
        finally:
            linux.umount(staging, linux.MNT_DETACH)

    def _ip(self, arguments: list[str], script: str = "") -> None:
        code, errors = self.reaper.run([self.config["ip"], *arguments], script)
        if code != 0:
            raise fields.RequestError(f"ip {' '.join(arguments)}: {errors or f'exit code {code}'}")

    # The request loop ------------------------------------------------------------------------------------

    def serve(self) -> None:
        while True:
            connection, _address = self.listener.accept()
            threading.Thread(target=self._answer, args=(connection,), daemon=True).start()

    def _answer(self, connection: socket.socket) -> None:
        channel = Channel(connection)
        try:
            request, fds = channel.receive()
        except (ProtocolError, OSError):
            channel.close()
            return
        reply: dict[str, Any]
        reply_fds: list[int] = []
        try:
            handler = self.handlers.get(request.get("op"))  # type: ignore[arg-type]
            if handler is None:
                raise fields.RequestError(f"op: unknown operation {request.get('op')!r}")
            reply, reply_fds = handler(request, fds)
        except (fields.RequestError, ProtocolError, network.PoolExhausted) as error:
            reply = {"error": str(error)}
        except OSError as error:
            reply = {"error": str(error), "errno": error.errno or errno.EIO}
        except Exception as error:
            traceback.print_exc()
            reply = {"error": f"internal error of the node agent: {error!r}"}
        finally:
            close_all(fds)
        try:
            channel.send(reply, reply_fds)
        except OSError:
            pass
        finally:
            close_all(reply_fds)
            channel.close()

    @property
    def handlers(self) -> dict[str, Callable[[dict[str, Any], list[int]], tuple[dict[str, Any], list[int]]]]:
        return {
            "create_pod": self.create_pod,
            "remove_pod": self.remove_pod,
            "start_container": self.start_container,
            "exec": self.exec,
            "signal": self.signal,
            "wait": self.wait,
            "connect": self.connect,
            "expose": self.expose,
            "service": self.service,
        }

    # Pods ----------------------------------------------------------------------------------------------

    def create_pod(self, request: dict[str, Any], _fds: list[int]) -> tuple[dict[str, Any], list[int]]:
        uid = fields.text(request, "uid")
        hostname = fields.text(request, "hostname", limit=64)
        with self.lock:
            if uid in self.pods:
                raise fields.RequestError(f"pod {uid} already has a sandbox")
            pod = Pod(uid, self.pool.allocate(), f"veth{next(self.numbers)}")
            self.pods[uid] = pod
        try:
            self._start_pause(pod, hostname)
            self._ip(["link", "set", "dev", pod.veth, "master", network.BRIDGE, "up"])
        except BaseException:
            with self.lock:
                self.pods.pop(uid, None)
            self._end_pod(pod)
            raise
        return {"ip": pod.address}, []

    def _start_pause(self, pod: Pod, hostname: str) -> None:
        def ended(_code: int) -> None:
            pod.pause_ended = True

        channel, pid = self._launch("pause", on_exit=ended)
        pod.pause_pid = pid
        with channel.sock:
            channel.send(
                {
                    "shm": os.path.join(self.run_dir, "shm"),
                    "hostname": hostname,
                    "ip": self.config["ip"],
                    "sleep": self.config["sleep"],
                    "script": network.pod_script(self.network, pod.address, pod.veth),
                }
            )
            answer, _ = channel.receive()
        if "error" in answer:
            raise fields.RequestError(f"pod sandbox: {answer['error']}")
        namespaces = {
            kind: os.open(f"/proc/{pid}/ns/{kind}", os.O_RDONLY | os.O_CLOEXEC) for kind in NAMESPACES
        }
        with self.lock:  # all at once: a container may start as soon as the pod has namespaces
            pod.namespaces = namespaces

    def remove_pod(self, request: dict[str, Any], _fds: list[int]) -> tuple[dict[str, Any], list[int]]:
        uid = fields.text(request, "uid")
        with self.lock:
            pod = self.pods.pop(uid, None)
        if pod is None:
            return {}, []  # removing what is not there is done
        self._end_pod(pod)  # its processes' statuses wait for wait() as ever
        return {}, []

    def _end_pod(self, pod: Pod) -> None:
        with self.reaper.condition:
            for process in pod.processes.values():
                _signal(process, signal.SIGKILL)
            if pod.pause_pid and not pod.pause_ended:
                os.kill(pod.pause_pid, signal.SIGKILL)
            ended = self.reaper.condition.wait_for(
                lambda: all(p.status is not None for p in pod.processes.values())
                and (pod.pause_ended or not pod.pause_pid),
                timeout=30,
            )
        close_all(list(pod.namespaces.values()))
        code, errors = self.reaper.run([self.config["ip"], "link", "del", pod.veth])
        if code != 0 and "Cannot find device" not in errors:
            print(f"kubesim sandbox: ip link del {pod.veth}: {errors}", file=sys.stderr)
        if ended:  # else the address stays taken rather than given to a pod that would collide
            with self.lock:
                self.pool.release(pod.address)

    def _pod(self, request: dict[str, Any]) -> tuple[Pod, list[int]]:
        """The pod, and copies of its namespaces' descriptors (remove_pod may close the pod's own)."""
        uid = fields.text(request, "pod")
        with self.lock:
            pod = self.pods.get(uid)
            if pod is None or not pod.namespaces:
                raise fields.RequestError(f"pod {uid} has no sandbox")
            return pod, [os.dup(pod.namespaces[kind]) for kind in NAMESPACES]

    # Containers and execs ------------------------------------------------------------------------------

    def start_container(self, request: dict[str, Any], fds: list[int]) -> tuple[dict[str, Any], list[int]]:
        pod, namespaces = self._pod(request)
        try:
            return self._start_container(request, fds, pod, namespaces)
        finally:
            close_all(namespaces)

    def _start_container(
        self, request: dict[str, Any], fds: list[int], pod: Pod, namespaces: list[int]
    ) -> tuple[dict[str, Any], list[int]]:
        order = fields.order(request, fds, NAMESPACES)
        order["mounts"] = fields.mounts(request)
        # the node's own directory (its sockets) stays out of every container's reach
        order["masked"] = [*fields.paths(request, "masked"), self.run_dir]
        order["staging"] = os.path.join(self.run_dir, "root")
        order["shm"] = os.path.join(self.run_dir, "shm")
        limit = fields.optional_integer(request, "memory_limit_bytes")
        process = Process(f"c{next(self.numbers)}", pod.uid, "container")
        if limit is not None and self.memory is not None:
            version, node_cgroup = self.memory
            process.cgroup = order["cgroup"] = cgroup.create(version, node_cgroup, process.id, limit)
        elif limit is not None:
            process.rlimit = order["rlimit_as"] = limit
        try:
            channel, _launcher = self._launch("container")
        except BaseException:
            self._finish(process, 1)
            raise
        with channel.sock:
            channel.send(order, [*namespaces, *fds])
            answer, _ = channel.receive()
            if "error" in answer:
                self._finish(process, 1)
                raise fields.RequestError(f"container: {answer['error']}")
            process.signal_pid = fields.pid(answer)
            self.reaper.adopt(process.signal_pid, lambda code: self._finish(process, code))
            channel.send({"adopted": True})
            answer, _ = channel.receive()
        if "error" in answer:
            raise fields.RequestError(f"container: {answer['error']}")
        self._register(pod, process)
        return {"id": process.id}, []

    def exec(self, request: dict[str, Any], fds: list[int]) -> tuple[dict[str, Any], list[int]]:
        container = self._process(request, "container")
        if container.pod != fields.text(request, "pod"):
            raise fields.RequestError(f"container {container.id} is not in pod {request['pod']}")
        order = fields.order(request, fds, ("pid", *NAMESPACES))
        order["cgroup"], order["rlimit_as"] = container.cgroup, container.rlimit
        namespaces: list[int] = []
        with self.reaper.condition:  # the init's pid is still its own while it has no status
            if container.status is not None:
                raise fields.RequestError(f"container {container.id} is not running")
            for kind in ("pid", *NAMESPACES):
                path = f"/proc/{container.signal_pid}/ns/{kind}"
                namespaces.append(os.open(path, os.O_RDONLY | os.O_CLOEXEC))
        process = Process(f"e{next(self.numbers)}", container.pod, "exec")
        try:
            channel, _launcher = self._launch("exec", on_exit=lambda code: self._finish(process, code))
            with channel.sock:
                channel.send(order, [*namespaces, *fds])
                answer, _ = channel.receive()
        finally:
            close_all(namespaces)
        if "error" in answer:
            raise fields.RequestError(f"exec: {answer['error']}")
        process.signal_pid = fields.pid(answer)
        with self.lock:
            pod = self.pods.get(container.pod)
        if pod is None:
            _signal(process, signal.SIGKILL)
            raise fields.RequestError(f"pod {container.pod} was removed")
        self._register(pod, process)
        return {"id": process.id}, []

    def _launch(self, mode: str, on_exit: Callable[[int], None] | None = None) -> tuple[Channel, int]:
        """Starts init.py in `mode` with a control socket on its fd 0."""
        ours, theirs = socket.socketpair()
        try:
            argv = boot.python_argv("init", mode, python=self.config["python"])
            pid = self.reaper.spawn(argv, stdin=theirs.fileno(), on_exit=on_exit)
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        ours.settimeout(CONTROL_TIMEOUT)
        return Channel(ours), pid

    def _register(self, pod: Pod, process: Process) -> None:
        with self.lock:
            if self.pods.get(pod.uid) is pod:
                pod.processes[process.id] = process
                self.processes[process.id] = process
                return
        with self.reaper.condition:
            _signal(process, signal.SIGKILL)
        raise fields.RequestError(f"pod {pod.uid} was removed")

    def _finish(self, process: Process, code: int) -> None:
        """Records how a process ended (on the reaper's thread), and removes its cgroup."""
        oom_killed = False
        if process.cgroup is not None and process.kind == "container" and self.memory is not None:
            with contextlib.suppress(OSError):
                oom_killed = cgroup.oom_kills(self.memory[0], process.cgroup) > 0
            cgroup.remove(process.cgroup)
        process.status = (code, oom_killed)

    def _process(self, request: dict[str, Any], kind: str | None = None) -> Process:
        process_id = fields.text(request, "id" if kind is None else kind)
        with self.lock:
            process = self.processes.get(process_id)
        if process is None or (kind is not None and process.kind != kind):
            raise fields.RequestError(f"no {kind or 'process'} {process_id} on this node (or it has ended)")
        return process

    def signal(self, request: dict[str, Any], _fds: list[int]) -> tuple[dict[str, Any], list[int]]:
        process = self._process(request)
        signum = fields.integer(request, "signal", 1, signal.NSIG - 1)
        with self.reaper.condition:
            _signal(process, signum)
        return {}, []

    def wait(self, request: dict[str, Any], _fds: list[int]) -> tuple[dict[str, Any], list[int]]:
        process = self._process(request)
        timeout = request.get("timeout")
        if timeout is not None and (not isinstance(timeout, int | float) or timeout < 0):
            raise fields.RequestError("timeout: must be a non-negative number or null")
        with self.reaper.condition:
            if not self.reaper.condition.wait_for(lambda: process.status is not None, timeout=timeout):
                return {"running": True}, []
            code, oom_killed = process.status  # type: ignore[misc]
        with self.lock:  # a status is told once (the kubelet's handle keeps it): execs for probes are many
            self.processes.pop(process.id, None)
            pod = self.pods.get(process.pod)
            if pod is not None:
                pod.processes.pop(process.id, None)
        return {"exit_code": code, "oom_killed": oom_killed}, []

    # The node's network --------------------------------------------------------------------------------

    def connect(self, request: dict[str, Any], _fds: list[int]) -> tuple[dict[str, Any], list[int]]:
        address = (fields.address(request, "ip"), fields.integer(request, "port", 1, 65535))
        timeout = request.get("timeout", 5.0)
        if not isinstance(timeout, int | float) or timeout <= 0:
            raise fields.RequestError("timeout: must be a positive number")
        try:
            connection = socket.create_connection(address, timeout=timeout)
        except TimeoutError:
            raise OSError(errno.ETIMEDOUT, f"connect to {address[0]}:{address[1]}: timed out") from None
        connection.settimeout(None)  # blocking again: the descriptor's flags travel with it
        return {}, [connection.detach()]  # our copy is closed once the answer is sent

    def expose(self, request: dict[str, Any], _fds: list[int]) -> tuple[dict[str, Any], list[int]]:
        path = fields.path(request, "socket")

        def dial() -> socket.socket:
            connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                connection.connect(path)
            except OSError:
                connection.close()
                raise
            return connection

        self._listen(fields.address(request, "ip"), fields.integer(request, "port", 1, 65535), dial, None)
        return {}, []

    def service(self, request: dict[str, Any], _fds: list[int]) -> tuple[dict[str, Any], list[int]]:
        ip, port = fields.address(request, "ip"), fields.integer(request, "port", 1, 65535)
        backends = request.get("backends")
        if not isinstance(backends, list) or len(backends) > 10000:
            raise fields.RequestError("backends: must be a list of [ip, port] pairs")
        pairs = [
            (fields.address({"ip": address}, "ip"), fields.integer({"port": backend_port}, "port", 1, 65535))
            for address, backend_port in fields.pairs(backends)
        ]
        if not pairs:
            self._unlisten(ip, port)
            return {}, []
        with self.lock:
            existing = self.forwarders.get((ip, port))
        if existing is not None and existing[1] is not None:
            existing[1].replace(pairs)
            return {}, []
        balancer = relay.RoundRobin(pairs)
        self._listen(ip, port, balancer.dial, balancer)
        return {}, []

    def _listen(
        self, ip: str, port: int, dial: Callable[[], socket.socket], balancer: relay.RoundRobin | None
    ) -> None:
        self._unlisten(ip, port)
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            try:
                listener.bind((ip, port))
            except OSError as error:
                if error.errno != errno.EADDRNOTAVAIL:
                    raise
                self._ip(["addr", "add", f"{ip}/32", "dev", "lo"])  # a Service IP becomes the node's own
                with self.lock:
                    self.added_addresses.add(ip)
                listener.bind((ip, port))
            listener.listen(128)
        except BaseException:
            listener.close()
            raise
        with self.lock:
            self.forwarders[(ip, port)] = (relay.Forwarder(listener, dial, f"{ip}:{port}"), balancer)

    def _unlisten(self, ip: str, port: int) -> None:
        with self.lock:
            forwarder = self.forwarders.pop((ip, port), None)
            release = ip in self.added_addresses and not any(key[0] == ip for key in self.forwarders)
            if forwarder is not None and release:
                self.added_addresses.discard(ip)
        if forwarder is None:
            return
        forwarder[0].close()
        if release:
            self._ip(["addr", "del", f"{ip}/32", "dev", "lo"])


def _signal(process: Process, signum: int) -> None:
    """Signals a process that has not ended (call under the reaper's condition: its pid is still its own)."""
    if process.status is not None or process.signal_pid is None:
        return
    try:
        if process.group:
            os.killpg(process.signal_pid, signum)
        else:
            os.kill(process.signal_pid, signum)
    except ProcessLookupError:
        pass


def main(args: Sequence[str]) -> None:
    config = json.loads(args[0])
    linux.set_parent_death_signal(signal.SIGKILL)  # unshare's --kill-child covered Python's start-up
    lifeline = config["lifeline_fd"]
    os.set_inheritable(lifeline, False)
    reaper = Reaper()
    threading.Thread(target=reaper.serve_forever, name="reaper", daemon=True).start()
    try:
        agent = Agent(config, reaper)
    except Exception as error:
        print(json.dumps({"error": str(error)}), flush=True)
        sys.exit(1)
    print(json.dumps({"ready": True}), flush=True)
    os.dup2(reaper.null, 1)
    threading.Thread(target=agent.serve, name="requests", daemon=True).start()
    # The kubelet's end of the lifeline closes when its process ends or Node.stop() closes it. Nothing to
    # tidy then: as PID 1, our exit ends every process of the node.
    while os.read(lifeline, 1):
        pass
    os._exit(0)
