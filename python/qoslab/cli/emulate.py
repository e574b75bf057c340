"""``qoslab emulate``: its options and help; the emulation is
``qoslab.emulate.cli.main``, imported only when it runs."""

from __future__ import annotations

from typing import Any

import click

from qoslab.cli._click import PATH, Command, call, namespace, report_option

#: Where policies run (qoslab.emulate.run.BACKENDS; a test keeps them equal).
BACKENDS = ("userspace", "kernel")

EMULATE_EPILOG = """\
Real Linux TCP (iperf3) and ping run between network namespaces, one per host of the
scenario; every router and link of the scenario is emulated in userspace by qoslab's
forwarder, whose conditioners are the very code 'qoslab run' simulates (rate,
propagation delay and loss per link direction; police, shape, fifo or a policy tree).
Frames are wire-sized (TSO/GSO/GRO off); with --offload on the hosts send TSO
super-packets, which the forwarder splits into their wire segments before any
conditioner (as Linux tbf's tbf_segment), so policies still count wire frames.
With --gro on the receiving hosts coalesce what they get (GRO, in a NAPI thread of
their own, as a host with a NIC does); what they send stays wire-sized.
The forwarder runs SCHED_FIFO; the kernel's RT throttling (95 % of each second by
default) holds it off 50 ms per second when it needs a whole CPU (about 1 Gbit/s of
wire-sized frames): --rt-unthrottle lifts that for the run and restores it after
(--cleanup restores it after a SIGKILL).
The forwarder sleeps in ppoll when it has nothing to do; waking it costs tens of µs
on a virtual machine whose idle CPUs halt. --busy-poll keeps it spinning instead (a
CPU per forwarder thread, all the time) for the lowest added latency and the
tightest delay line. A forwarder that never sleeps is held off its CPU whenever
ordinary tasks queue on it (the kernel gives them their share, up to 50 ms at a
time; --rt-unthrottle lifts the RT limit, not that share): use it on a machine
with a CPU to spare. --idle-poll instead holds a PM QoS CPU latency request of 0 µs
for the run (the kernel withdraws it when the run ends, however it ends): idle CPUs
poll rather than halt, so a sleeping forwarder wakes in µs; idle CPUs then spin.
Needs root and iperf3, iproute2, ethtool,
ping (bash scripts/setup.sh installs them). Every namespace and process is removed at
the end, on an error, on Ctrl-C and on SIGTERM; after a SIGKILL, run --cleanup.

--backend kernel runs each policy in the kernel's own qdisc instead (tc tbf, htb,
pfifo, bfifo on a veth inside the emulated router), for a three-way comparison:
  qoslab compare SCENARIO --modes sim,emu,kernel
--capture LINK[:ingress|egress]=FILE.pcap writes what the forwarder sees there
(LINK as in the results, e.g. r1->r2); without a side, both directions in one
file as tcpdump on the upstream router's port would see them (LINK before its
policy, the reverse direction after its transmitter), ready for
'qoslab analyze FILE --policing'.
--plan prints what would run (hosts, flows, policies with their tc form; no root
needed); --cleanup removes what a killed run left.

examples:
  sudo qoslab emulate scenarios/example.toml
  sudo qoslab emulate scenarios/isr4000-police.toml --out /tmp/emu --json
  sudo qoslab emulate scenarios/trees/linux-htb-pfifo.toml --backend kernel
  sudo qoslab emulate scenarios/example.toml --capture 'r1->r2=/tmp/r1r2.pcap'
  sudo qoslab emulate scenarios/example.toml --offload on
  sudo qoslab emulate scenarios/example.toml --threads 0
  sudo qoslab emulate scenarios/example.toml --gro on
  sudo qoslab emulate scenarios/example.toml --gro on --rt-unthrottle
  sudo qoslab emulate scenarios/example.toml --busy-poll --rt-unthrottle
  sudo qoslab emulate scenarios/example.toml --idle-poll
  qoslab emulate scenarios/example.toml --plan
  sudo qoslab emulate --cleanup
"""


@click.command(
    "emulate",
    cls=Command,
    help="Emulate a scenario: real iperf3 and ping between namespaces, through"
    " qoslab's own conditioners in a userspace forwarder (or the kernel's qdiscs).",
    epilog=EMULATE_EPILOG,
)
@click.argument(
    "scenario",
    type=PATH,
    required=False,
    metavar="[SCENARIO]",
    help="the scenario TOML file",
)
@click.option(
    "--backend", type=click.Choice(BACKENDS), default="userspace", help="where policies run"
)
@click.option(
    "--offload",
    type=click.Choice(("on", "off")),
    default="off",
    help="on: hosts send GSO super-packets; conditioners count, police and shape"
    " their wire segments",
)
@click.option(
    "--gro",
    type=click.Choice(("on", "off")),
    default="off",
    help="on: the hosts coalesce received frames (GRO) in a NAPI thread of their own, as a"
    " host with a NIC does (wire-sized frames; not with --offload on)",
)
@click.option(
    "--rt-unthrottle",
    is_flag=True,
    help="lift the kernel's real-time throttling (kernel.sched_rt_runtime_us = -1) for the"
    " run, so the SCHED_FIFO forwarder is not held off 50 ms of every second; restored"
    " after (machine-wide)",
)
@click.option(
    "--busy-poll",
    is_flag=True,
    help="the forwarder never sleeps: frames and delay-line releases are handled within"
    " about a µs instead of after a wake-up; costs a whole CPU per forwarder thread",
)
@click.option(
    "--idle-poll",
    is_flag=True,
    help="idle CPUs poll instead of halting for the run (PM QoS CPU latency 0 µs, withdrawn"
    " when the run ends), so the sleeping forwarder wakes without a hypervisor wake-up",
)
@click.option(
    "--threads",
    type=click.IntRange(min=0, max=64),
    default=1,
    show_default=True,
    metavar="N",
    help="forwarder threads: 1 = a single thread; 0 = one per independent group of ports"
    " (data and ACKs of a two-host path apart, at most one per CPU)",
)
@click.option("--out", type=PATH, metavar="DIR", help="write results.json, series CSV/Parquet here")
@click.option("--json", is_flag=True, help="print the summary as JSON")
@report_option("write an HTML report (default: DIR/report.html with --out, else report.html)")
@click.option("--seed", metavar="N", type=int, help="override the scenario's seed")
@click.option(
    "--capture",
    multiple=True,
    metavar="LINK[:DIR]=PCAP",
    help="write a pcap of a link direction's policy ingress or egress (repeatable)",
)
@click.option("--plan", is_flag=True, help="print what would run, and stop")
@click.option("--quiet", is_flag=True, help="print nothing but errors")
@click.option(
    "--cleanup",
    is_flag=True,
    help="remove namespaces and processes left by killed runs, and stop",
)
@click.option("--all", is_flag=True, help="with --cleanup: also those of runs still going")
def command(**params: Any) -> int:
    from qoslab.emulate import cli as emulate_cli

    return call("emulate", emulate_cli.main, namespace("emulate", params))
