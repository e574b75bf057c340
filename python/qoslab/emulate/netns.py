"""Network namespaces, veth pairs and the processes started in them.

The emulated network of one run (see ``qoslab.emulate``)::

    host ns qle-<pid>-s0          forwarder ns qle-<pid>-net          host ns qle-<pid>-d0
    eth0 10.77.0.1  --veth--  p0 | qoslab-emu (userspace) | p1  --veth--  eth0 10.77.0.2

Every host is a namespace with one veth (``eth0``) whose peer (``p<i>``) lives in the
forwarder namespace, where ``qoslab-emu`` emulates every router and link of the
scenario. All hosts share one /16 with static neighbour entries (the forwarder is
L2-transparent: it forwards frames unchanged), so no ARP, no router address, no default
route, and no interface of the machine's own namespace is touched. IPv6 is off (no
neighbour discovery), and TSO/GSO/GRO and checksum offload are off on every veth so TCP
builds wire-sized frames with real checksums (a forwarded frame with a partial checksum
would be dropped by the receiver).
With ``gro`` (``--gro on``) each host's eth0 then coalesces what it receives, in a
threaded NAPI (``HOST_GRO``); what the hosts send stays wire-sized.

Safety: names carry the pid (``qle-<pid>-…``); :class:`Netns` deletes what it made on
``close()`` (also on error, SIGINT and SIGTERM through ``qoslab.emulate.run``), killing
every process still in its namespaces first; :func:`cleanup_stale` removes what a killed
run (SIGKILL) left.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from qoslab import _core

__all__ = [
    "PREFIX",
    "REQUIRED_TOOLS",
    "SETUP_HINT",
    "EmulationSetupError",
    "Netns",
    "cleanup_stale",
    "preflight",
]

PREFIX = "qle-"
REQUIRED_TOOLS = ("ip", "tc", "iperf3", "ping", "ethtool", "nstat")
SETUP_HINT = "apt-get install -y iperf3 iproute2 ethtool iputils-ping (or bash scripts/setup.sh)"
CMD_TIMEOUT_S = 20.0
#: ethtool -K: wire-sized frames with real checksums (see the module doc)
OFFLOADS_OFF = ("tso", "off", "gso", "off", "gro", "off", "tx", "off", "rx", "off")
#: ethtool -K of both ends of every host's veth with ``offload=True`` (``--offload on``):
#: TCP hands 64 KB super-packets (TSO, with checksum offload, which TSO needs) to the
#: host's eth0; the forwarder reads them with their virtio-net header and splits them
#: into wire segments; segments it delivers in one batch reach the receiving host joined
#: again as a GSO packet (GRO and rx offload stay off: the forwarder does the joining).
#: The forwarder's port needs TSO too: without it ``validate_xmit_skb`` software-segments
#: every GSO packet the forwarder sends (``skb_gso_segment`` in net/core/dev.c) and the
#: receiving host's stack takes the segments one by one again, inside the forwarder's
#: ``send()``.
OFFLOADS_GSO = ("sg", "on", "tx", "on", "tso", "on", "gso", "on", "gro", "off", "rx", "off")
#: With ``gro=True`` (``--gro on``, wire-sized frames only): each host's eth0 receives as a
#: host with a NIC does. ``gro on`` gives the veth a NAPI context (drivers/net/veth.c,
#: ``veth_set_features`` enables NAPI when GRO is turned on) so consecutive frames of a flow
#: are coalesced (``napi_gro_receive``) before IP and TCP input, and ``threaded`` 1
#: (Documentation/ABI/testing/sysfs-class-net, /sys/class/net/<dev>/threaded) runs that NAPI
#: poll in a kernel thread of its own instead of inside the sender's ``send()`` — for the
#: forwarder's ports, inside the forwarder thread. What the host transmits stays
#: wire-sized (TSO/GSO off), so the forwarder and its conditioners see the same frames.
HOST_GRO = ("gro", "on")
SUBNET = "10.77"


class EmulationSetupError(RuntimeError):
    """The machine cannot run an emulation (not root, a tool or kernel feature is
    missing) or a set-up command failed; the message says what to do."""


def preflight() -> None:
    """Refuses clearly when the emulator cannot run here."""
    if os.name != "posix" or not os.path.isdir("/proc/self/ns"):
        raise EmulationSetupError("emulate needs Linux network namespaces")
    if os.geteuid() != 0:
        raise EmulationSetupError(
            "emulate needs root (network namespaces, veth, raw sockets): run it with sudo"
        )
    missing = [t for t in REQUIRED_TOOLS if shutil.which(t) is None]
    if missing:
        raise EmulationSetupError(f"emulate needs {', '.join(missing)}; install: {SETUP_HINT}")


def run_cmd(argv: Sequence[str], timeout: float = CMD_TIMEOUT_S, check: bool = True) -> str:
    """Runs a set-up command; a failure raises with the command and its stderr."""
    try:
        p = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise EmulationSetupError(f"timed out after {timeout:.0f} s: {' '.join(argv)}") from e
    if check and p.returncode != 0:
        msg = (p.stderr or p.stdout).strip().splitlines()
        raise EmulationSetupError(
            f"'{' '.join(argv)}' failed: {msg[-1] if msg else f'exit {p.returncode}'}"
        )
    return p.stdout


def host_ip(index: int) -> str:
    """The address of the ``index``-th host: 10.77.0.1, 10.77.0.2, … (250 a /24);
    the simulator's captures use the same numbering (``qoslab_sim::addr``)."""
    return str(_core.host_address(index)[0])


def host_mac(index: int) -> str:
    """A locally administered, deterministic MAC for host ``index``'s eth0."""
    return str(_core.host_address(index)[1])


@dataclass
class Netns:
    """The namespaces of one emulation run; ``close()`` removes them all."""

    hosts: list[str]
    tag: str = field(default_factory=lambda: str(os.getpid()))
    #: the hosts send GSO super-packets (see ``OFFLOADS_GSO``)
    offload: bool = False
    #: the hosts' eth0 coalesce what they receive, in a NAPI thread (see ``HOST_GRO``)
    gro: bool = False
    created: list[str] = field(default_factory=list)
    procs: list[subprocess.Popen[str]] = field(default_factory=list)

    # -- names -----------------------------------------------------------------

    @property
    def net(self) -> str:
        """The forwarder's namespace."""
        return f"{PREFIX}{self.tag}-net"

    def ns(self, host: str) -> str:
        return f"{PREFIX}{self.tag}-{host}"

    def port(self, host: str) -> str:
        """The host's port (veth peer) in the forwarder namespace."""
        return f"p{self.hosts.index(host)}"

    def ip(self, host: str) -> str:
        return host_ip(self.hosts.index(host))

    def exec_argv(self, host: str, argv: Sequence[str]) -> list[str]:
        return ["ip", "netns", "exec", self.ns(host), *argv]

    # -- building ----------------------------------------------------------------

    def _add_ns(self, name: str) -> None:
        run_cmd(["ip", "netns", "add", name])
        self.created.append(name)
        run_cmd(["ip", "-n", name, "link", "set", "lo", "up"])
        for key in ("all", "default"):
            run_cmd(
                [
                    "ip",
                    "netns",
                    "exec",
                    name,
                    "sysctl",
                    "-qw",
                    f"net.ipv6.conf.{key}.disable_ipv6=1",
                ]
            )

    def build(self) -> None:
        """Creates the forwarder namespace, one namespace per host, the veths and the
        static neighbour tables."""
        for h in self.hosts:
            if not re.fullmatch(r"[A-Za-z0-9_.-]{1,40}", h):
                raise EmulationSetupError(f"host name '{h}' cannot name a namespace")
        self._add_ns(self.net)
        for i, h in enumerate(self.hosts):
            ns, port = self.ns(h), self.port(h)
            self._add_ns(ns)
            run_cmd(
                [
                    "ip",
                    "link",
                    "add",
                    port,
                    "netns",
                    self.net,
                    "type",
                    "veth",
                    "peer",
                    "name",
                    "eth0",
                    "netns",
                    ns,
                ]
            )
            run_cmd(["ip", "-n", ns, "link", "set", "eth0", "address", host_mac(i)])
            run_cmd(["ip", "-n", ns, "addr", "add", f"{host_ip(i)}/16", "dev", "eth0"])
            for dev, where in (("eth0", ns), (port, self.net)):
                k = OFFLOADS_GSO if self.offload else OFFLOADS_OFF
                run_cmd(["ip", "netns", "exec", where, "ethtool", "-K", dev, *k])
                run_cmd(["ip", "-n", where, "link", "set", dev, "up"])
                if self.gro and where == ns:
                    # after `up`: veth makes its NAPI context when the device opens
                    self._host_gro(ns)
            run_cmd(["ip", "-n", self.net, "link", "set", port, "promisc", "on"])
        for i, h in enumerate(self.hosts):
            lines = [
                f"neigh replace {host_ip(j)} lladdr {host_mac(j)} dev eth0 nud permanent"
                for j in range(len(self.hosts))
                if j != i
            ]
            if lines:
                self.batch(self.ns(h), lines)

    def _host_gro(self, ns: str) -> None:
        """GRO in a threaded NAPI on the host's eth0 (``HOST_GRO``); ``ip netns exec``
        mounts the namespace's own sysfs, so the path names this host's eth0."""
        run_cmd(["ip", "netns", "exec", ns, "ethtool", "-K", "eth0", *HOST_GRO])
        run_cmd(["ip", "netns", "exec", ns, "sh", "-c", "echo 1 > /sys/class/net/eth0/threaded"])

    def batch(self, ns: str, lines: Iterable[str]) -> None:
        """Runs ``ip -batch`` lines in ``ns`` (one process for many commands)."""
        text = "\n".join(lines) + "\n"
        try:
            p = subprocess.run(
                ["ip", "-n", ns, "-batch", "-"],
                input=text,
                capture_output=True,
                text=True,
                timeout=CMD_TIMEOUT_S,
            )
        except subprocess.TimeoutExpired as e:
            raise EmulationSetupError(f"ip -batch in {ns} timed out") from e
        if p.returncode != 0:
            raise EmulationSetupError(f"ip -batch in {ns} failed: {p.stderr.strip()}")

    def sysctl(self, host: str, settings: dict[str, str]) -> None:
        for key, value in settings.items():
            run_cmd(self.exec_argv(host, ["sysctl", "-qw", f"{key}={value}"]))

    def veth_pair(self, a: str, b: str) -> None:
        """A veth pair with both ends in the forwarder namespace (a kernel-qdisc loop)."""
        run_cmd(["ip", "-n", self.net, "link", "add", a, "type", "veth", "peer", "name", b])
        for dev in (a, b):
            run_cmd(["ip", "netns", "exec", self.net, "ethtool", "-K", dev, *OFFLOADS_OFF])
            run_cmd(["ip", "-n", self.net, "link", "set", dev, "up"])

    # -- processes ---------------------------------------------------------------

    def popen(self, host: str, argv: Sequence[str]) -> subprocess.Popen[str]:
        """Starts ``argv`` in ``host``'s namespace, tracked for cleanup."""
        p = subprocess.Popen(
            self.exec_argv(host, argv),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            start_new_session=True,  # Ctrl-C on the terminal reaches us, not them
        )
        self.procs.append(p)
        return p

    # -- teardown ----------------------------------------------------------------

    def close(self) -> None:
        """Kills every process this run started or that still lives in its
        namespaces, then deletes the namespaces (veths go with them)."""
        for p in self.procs:
            if p.poll() is None:
                _kill_group(p.pid)
        for p in self.procs:
            try:
                p.wait(timeout=2)
            except subprocess.TimeoutExpired:
                _kill_group(p.pid, signal.SIGKILL)
        for name in reversed(self.created):
            _delete_ns(name)
        self.created.clear()


def _kill_group(pid: int, sig: int = signal.SIGTERM) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _ns_pids(name: str) -> list[int]:
    try:
        out = subprocess.run(
            ["ip", "netns", "pids", name], capture_output=True, text=True, timeout=5
        ).stdout
    except (subprocess.TimeoutExpired, OSError):
        return []
    return [int(x) for x in out.split() if x.isdigit()]


def _delete_ns(name: str) -> None:
    """Kills what runs in ``name`` (TERM, then KILL) and deletes it."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        pids = _ns_pids(name)
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 2.0
        while _ns_pids(name) and time.monotonic() < deadline:
            time.sleep(0.05)
    subprocess.run(["ip", "netns", "delete", name], capture_output=True, timeout=10)


def list_namespaces() -> list[str]:
    try:
        out = subprocess.run(
            ["ip", "netns", "list"], capture_output=True, text=True, timeout=5
        ).stdout
    except (subprocess.TimeoutExpired, OSError):
        return []
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def cleanup_stale(all_runs: bool = False) -> list[str]:
    """Deletes the namespaces (and kills their processes) of qoslab emulations whose
    process is gone — what a SIGKILLed run left — or of every run with
    ``all_runs``. Returns the names deleted."""
    gone = []
    for name in list_namespaces():
        m = re.match(rf"{re.escape(PREFIX)}(\d+)-", name)
        if not m:
            continue
        pid = int(m.group(1))
        alive = pid != os.getpid() and os.path.exists(f"/proc/{pid}")
        if alive and not all_runs:
            continue
        _delete_ns(name)
        gone.append(name)
    return gone
