//! The one module that builds conditioners: each link direction's egress
//! policy and each ingress policer, through the simulator's own builders
//! (`qoslab_sim::policy::{build_policer, build_shaper, build_fifo}`,
//! `qoslab_sim::tree::build`), in the simulator's order and with its
//! names, seeds and defaults, so that the policies (and their indices in
//! the series) are the ones `qoslab run` reports for the same scenario.
//!
//! The links and policies come from `qoslab_sim::build_links`, the very
//! function `Sim::new` uses; this module adds the kernel backend (tc forms,
//! pass-through queues).

use qoslab_core::queue::{Fifo, FifoLimit};
use qoslab_sim::config::{FifoLimit as CfgFifoLimit, PolicySpec, SimConfig};
use qoslab_sim::link::Link;
use qoslab_sim::net::{cfg_err, Net};
use qoslab_sim::policy::{EgressQueue, Policy};
use qoslab_sim::SimError;

/// The queue the transmitter of a kernel-backed direction pulls from:
/// frames come back from the real qdisc already conditioned, so this only
/// holds them while the link serialises (never drops in practice).
const KERNEL_PASSTHROUGH_PACKETS: u32 = 1_000_000;

/// One link direction of the emulated network.
#[derive(Debug)]
pub struct Dir {
    /// `from->to`, as the simulator names it.
    pub name: String,
    pub from: u32,
    pub link: Link,
    /// Set when the direction's egress policy runs in a real qdisc: the
    /// policy index that reports it (`None` for an unreported default
    /// device queue).
    pub kernel: Option<Option<u32>>,
}

/// The tc form of a policy, where Linux has the qdisc.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KernelQdisc {
    /// `tc qdisc add dev DEV root <qdisc> <args…>`.
    Root { qdisc: String, args: Vec<String> },
    /// Full tc commands (without the leading `tc`); `DEV` is the device.
    Commands(Vec<Vec<String>>),
}

/// Everything the network needs: directions (with their links) and the
/// reported policies, plus each policy's direction and kernel form.
pub struct Conditioners {
    pub dirs: Vec<Dir>,
    pub policies: Vec<Policy>,
    /// Per policy: the direction it conditions (`None` for an ingress
    /// policer shared by several directions).
    pub policy_dir: Vec<Option<u32>>,
    pub kernel: Vec<Option<KernelQdisc>>,
}

/// The tc form of a direction's egress policy, where this kernel has the
/// qdisc (tbf, pfifo, bfifo, pfifo_head_drop, HTB trees of FIFOs).
fn kernel_form(egress: Option<&PolicySpec>, device_queue_packets: u32) -> Option<KernelQdisc> {
    let root = |qdisc: &str, args: Vec<String>| {
        Some(KernelQdisc::Root {
            qdisc: qdisc.into(),
            args,
        })
    };
    match egress {
        None => root(
            "pfifo",
            vec!["limit".into(), device_queue_packets.to_string()],
        ),
        Some(PolicySpec::Police(_)) => None,
        Some(PolicySpec::Shape(s)) if s.kind.eq_ignore_ascii_case("tbf") => root(
            "tbf",
            s.params
                .iter()
                .flat_map(|(k, v)| [k.clone(), v.clone()])
                .collect(),
        ),
        Some(PolicySpec::Shape(_)) => None,
        Some(PolicySpec::Fifo(f)) => match (f.limit, f.head_drop) {
            (CfgFifoLimit::Packets(n), false) => root("pfifo", vec!["limit".into(), n.to_string()]),
            (CfgFifoLimit::Packets(n), true) => {
                root("pfifo_head_drop", vec!["limit".into(), n.to_string()])
            }
            (CfgFifoLimit::Bytes(b), false) => root("bfifo", vec!["limit".into(), b.to_string()]),
            (CfgFifoLimit::Bytes(_), true) => None,
        },
        Some(PolicySpec::Tree(t)) => crate::tc::htb_commands(t),
        Some(PolicySpec::Sized { .. }) => None,
    }
}

/// Builds the conditioners of `net` with the simulator's own
/// `qoslab_sim::build_links` (same policies, order, names and seeds);
/// directions whose index is in `kernel_dirs` get a pass-through queue
/// instead of their userspace egress policy (the policy is still built, for
/// its description and counters).
pub fn build(cfg: &SimConfig, net: &Net, kernel_dirs: &[u32]) -> Result<Conditioners, SimError> {
    let (links, mut policies) = qoslab_sim::build_links(cfg, net)?;
    let n_ingress = net.ingress.len();
    let mut policy_dir: Vec<Option<u32>> = Vec::with_capacity(policies.len());
    let mut kernel = Vec::with_capacity(policies.len());
    for (k, p) in policies.iter().enumerate() {
        if k < n_ingress {
            let users: Vec<u32> = (0..net.dirs.len() as u32)
                .filter(|&d| net.dirs[d as usize].ingress == Some(k))
                .collect();
            policy_dir.push((users.len() == 1).then(|| users[0]));
            kernel.push(None);
        } else {
            let d = &net.dirs[p.queue_dir.expect("an egress policy has its direction") as usize];
            policy_dir.push(p.queue_dir);
            kernel.push(kernel_form(
                d.egress.as_ref().map(|plan| &plan.spec),
                d.params.queue_limit_packets,
            ));
        }
    }
    let mut dirs = Vec::with_capacity(links.len());
    for (i, mut l) in links.into_iter().enumerate() {
        let d = &net.dirs[i];
        // The emulator runs on the real clock: its own wake-ups are late by
        // themselves, so the simulator's drawn lateness is not added.
        l.timer_rng = None;
        let is_kernel = kernel_dirs.contains(&(i as u32));
        let queue_policy = l.queue_policy;
        if is_kernel {
            if let Some(qp) = queue_policy {
                policies[qp as usize].queue_dir = None;
            }
            l.queue = EgressQueue::Fifo(
                Fifo::new(FifoLimit::Packets(KERNEL_PASSTHROUGH_PACKETS), false)
                    .map_err(|e| cfg_err(d.path.clone(), e.message))?,
            );
            l.egress_policer = None;
            l.queue_policy = None;
        }
        dirs.push(Dir {
            name: net.dir_name(i as u32),
            from: d.from,
            link: l,
            kernel: is_kernel.then_some(queue_policy),
        });
    }
    Ok(Conditioners {
        dirs,
        policies,
        policy_dir,
        kernel,
    })
}
