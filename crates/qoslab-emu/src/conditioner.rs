//! The one module that builds conditioners: each link direction's egress
//! policy and each ingress policer, through the simulator's own builders
//! (`qoslab_sim::policy::{build_policer, build_shaper, build_fifo}`,
//! `qoslab_sim::tree::build`), in the simulator's order and with its
//! names, seeds and defaults, so that the policies (and their indices in
//! the series) are the ones `qoslab run` reports for the same scenario.
//!
//! Mirrors the model building of `qoslab_sim`'s `Sim::new`
//! (crates/qoslab-sim/src/sim.rs); keep the two in step.

use qoslab_core::queue::{Fifo, FifoLimit};
use qoslab_core::rng::Rng;
use qoslab_sim::config::{FifoLimit as CfgFifoLimit, PolicySpec, SimConfig};
use qoslab_sim::link::Link;
use qoslab_sim::net::{cfg_err, Net};
use qoslab_sim::policy::{self, EgressQueue, Policy};
use qoslab_sim::SimError;

/// RNG stream bases, as `qoslab_sim`'s engine derives them from the seed.
const STREAM_LINK: u64 = 0x1_0000;
const STREAM_TREE: u64 = 0x4_0000_0000;

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

/// Builds the conditioners of `net`; directions whose index is in
/// `kernel_dirs` get a pass-through queue instead of their userspace
/// egress policy (the policy is still built, for its description).
pub fn build(cfg: &SimConfig, net: &Net, kernel_dirs: &[u32]) -> Result<Conditioners, SimError> {
    let mut policies = Vec::new();
    let mut policy_dir: Vec<Option<u32>> = Vec::new();
    let mut kernel = Vec::new();
    let mut ingress_policy = Vec::new();
    for (k, plan) in net.ingress.iter().enumerate() {
        let pol = policy::build_policer(&plan.spec, &plan.path)?;
        let kind = plan.spec.kind.to_ascii_lowercase();
        let mut p = Policy::new(plan.name.clone(), kind, pol.describe());
        p.policer = Some(pol);
        policies.push(p);
        let users: Vec<u32> = (0..net.dirs.len() as u32)
            .filter(|&d| net.dirs[d as usize].ingress == Some(k))
            .collect();
        policy_dir.push((users.len() == 1).then(|| users[0]));
        kernel.push(None);
        ingress_policy.push(policies.len() as u32 - 1);
    }
    let mut dirs = Vec::with_capacity(net.dirs.len());
    for (i, d) in net.dirs.iter().enumerate() {
        let name = net.dir_name(i as u32);
        let pname = format!("{name} egress");
        let device = || -> Result<Fifo, SimError> {
            Fifo::new(FifoLimit::Packets(d.params.queue_limit_packets), false)
                .map_err(|e| cfg_err(format!("{}.queue_limit_packets", d.path), e.message))
        };
        let mut egress_policer = None;
        let mut queue_policy = None;
        let mut tc = None;
        let queue = match &d.egress {
            None => {
                let q = EgressQueue::Fifo(device()?);
                tc = Some(KernelQdisc::Root {
                    qdisc: "pfifo".into(),
                    args: vec!["limit".into(), d.params.queue_limit_packets.to_string()],
                });
                if d.report_device_queue {
                    let mut p = Policy::new(pname, "fifo".into(), q.describe());
                    p.queue_dir = Some(i as u32);
                    policies.push(p);
                    queue_policy = Some(policies.len() as u32 - 1);
                }
                q
            }
            Some(plan) => {
                let (q, mut p) = match &plan.spec {
                    PolicySpec::Police(m) => {
                        let pol = policy::build_policer(m, &plan.path)?;
                        let kind = m.kind.to_ascii_lowercase();
                        let mut p = Policy::new(pname, kind, pol.describe());
                        p.policer = Some(pol);
                        (EgressQueue::Fifo(device()?), p)
                    }
                    PolicySpec::Shape(s) => {
                        let sh = policy::build_shaper(s, &plan.path)?;
                        let q = EgressQueue::Shaper(sh);
                        let kind = s.kind.to_ascii_lowercase();
                        if kind == "tbf" {
                            tc = Some(KernelQdisc::Root {
                                qdisc: "tbf".into(),
                                args: s
                                    .params
                                    .iter()
                                    .flat_map(|(k, v)| [k.clone(), v.clone()])
                                    .collect(),
                            });
                        }
                        let p = Policy::new(pname, kind, q.describe());
                        (q, p)
                    }
                    PolicySpec::Fifo(f) => {
                        let q = EgressQueue::Fifo(policy::build_fifo(f, &plan.path)?);
                        tc = match (f.limit, f.head_drop) {
                            (CfgFifoLimit::Packets(n), false) => Some(("pfifo", n.to_string())),
                            (CfgFifoLimit::Packets(n), true) => {
                                Some(("pfifo_head_drop", n.to_string()))
                            }
                            (CfgFifoLimit::Bytes(b), false) => Some(("bfifo", b.to_string())),
                            (CfgFifoLimit::Bytes(_), true) => None,
                        }
                        .map(|(qdisc, n)| KernelQdisc::Root {
                            qdisc: qdisc.into(),
                            args: vec!["limit".into(), n],
                        });
                        let p = Policy::new(pname, "fifo".into(), q.describe());
                        (q, p)
                    }
                    PolicySpec::Tree(t) => {
                        let seed = Rng::new(cfg.seed, STREAM_TREE + i as u64).next_u64();
                        let tree = qoslab_sim::tree::build(t, &plan.path, seed)?;
                        let warnings = tree.warnings().to_vec();
                        let q = EgressQueue::Tree(tree);
                        let kind = t.root.kind.to_ascii_lowercase();
                        let mut p = Policy::new(pname, kind, q.describe());
                        p.res
                            .describe
                            .extend(warnings.into_iter().map(|w| ("warning".into(), w)));
                        p.tree = true;
                        tc = crate::tc::htb_commands(t);
                        (q, p)
                    }
                };
                p.queue_dir = Some(i as u32);
                let police = p.policer.is_some();
                policies.push(p);
                let idx = policies.len() as u32 - 1;
                queue_policy = Some(idx);
                if police {
                    egress_policer = Some(idx);
                }
                q
            }
        };
        if let Some(qp) = queue_policy {
            policy_dir.push(Some(i as u32));
            kernel.push(tc);
            debug_assert_eq!(policies.len() - 1, qp as usize);
        }
        let is_kernel = kernel_dirs.contains(&(i as u32));
        let queue = if is_kernel {
            if let Some(qp) = queue_policy {
                policies[qp as usize].queue_dir = None;
            }
            EgressQueue::Fifo(
                Fifo::new(FifoLimit::Packets(KERNEL_PASSTHROUGH_PACKETS), false)
                    .map_err(|e| cfg_err(d.path.clone(), e.message))?,
            )
        } else {
            queue
        };
        let mut l = Link::new(
            d.to,
            d.params.rate,
            d.params.delay.as_ns(),
            d.params.loss_ppm,
            Rng::new(cfg.seed, STREAM_LINK + i as u64),
            queue,
            net.nodes[d.from as usize].timer,
        );
        if !is_kernel {
            l.egress_policer = egress_policer;
            l.queue_policy = queue_policy;
        }
        l.ingress_policer = d.ingress.map(|k| ingress_policy[k]);
        dirs.push(Dir {
            name,
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
