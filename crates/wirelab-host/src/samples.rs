//! CPU, memory and interface rates of a host sampled while a point runs
//! (`points/<id>/samples/<host>.jsonl`, one [`Sample`] a line), and their
//! [`SampleSummary`] in point.json. A sample is the difference of two
//! snapshots ([`crate::counters::Snapshot`]) of the host, sans-IO.

use crate::counters::{CpuTimes, Snapshot};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub use wirelab_analysis::schema::host::{CpuBusy, Rates, Sample};

/// The sample from `prev` to `now`; None if `now` is not later.
pub fn sample(prev: &Snapshot, now: &Snapshot) -> Option<Sample> {
    let interval_ns = now.unix_ns.checked_sub(prev.unix_ns).filter(|&d| d > 0)?;
    let secs = interval_ns as f64 / 1e9;
    let cpus: Vec<CpuBusy> = now
        .cpus
        .iter()
        .filter(|c| c.cpu != "cpu")
        .filter_map(|c| {
            let p = prev.cpus.iter().find(|p| p.cpu == c.cpu)?;
            cpu_busy(p, c)
        })
        .collect();
    let mut ifaces = BTreeMap::new();
    for (dev, i) in &now.ifaces {
        let Some(p) = prev.ifaces.get(dev) else {
            continue;
        };
        let rate = |k: &str, scale: f64| {
            let (a, b) = (i.sysfs.get(k), p.sysfs.get(k));
            match (a, b) {
                (Some(a), Some(b)) if a >= b => (a - b) as f64 * scale / secs,
                _ => 0.0,
            }
        };
        ifaces.insert(
            dev.clone(),
            Rates {
                rx_pps: rate("rx_packets", 1.0),
                tx_pps: rate("tx_packets", 1.0),
                rx_bps: rate("rx_bytes", 8.0),
                tx_bps: rate("tx_bytes", 8.0),
            },
        );
    }
    let mem_used_kb = match (now.meminfo.get("MemTotal"), now.meminfo.get("MemAvailable")) {
        (Some(t), Some(a)) => Some(t.saturating_sub(*a)),
        _ => None,
    };
    Some(Sample {
        unix_ns: now.unix_ns,
        interval_ns,
        busy_cpus: cpus.iter().map(|c| c.busy).sum(),
        softirq_cpus: cpus.iter().map(|c| c.softirq).sum(),
        cpus,
        mem_used_kb,
        ifaces,
    })
}

fn cpu_busy(p: &CpuTimes, c: &CpuTimes) -> Option<CpuBusy> {
    let d = |a: u64, b: u64| a.saturating_sub(b) as f64;
    let total = d(c.total(), p.total());
    if total <= 0.0 {
        return None;
    }
    Some(CpuBusy {
        cpu: c.cpu.clone(),
        user: (d(c.user, p.user) + d(c.nice, p.nice)) / total,
        system: d(c.system, p.system) / total,
        softirq: d(c.softirq, p.softirq) / total,
        busy: d(c.busy(), p.busy()).min(total) / total,
    })
}

/// A host's samples in short (point.json `samples`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SampleSummary {
    pub samples: usize,
    /// CPUs busy, mean and most over the samples.
    pub busy_cpus_mean: f64,
    pub busy_cpus_max: f64,
    /// CPUs in softirq, most.
    pub softirq_cpus_max: f64,
    /// The busiest single CPU's busy fraction, most.
    pub one_cpu_busy_max: f64,
    pub mem_used_kb_max: Option<u64>,
}

/// The summary of a host's samples; None without samples.
pub fn summarize(samples: &[Sample]) -> Option<SampleSummary> {
    let mut acc = Summing::default();
    samples.iter().for_each(|s| acc.add(s));
    acc.summary()
}

/// A summary built one sample at a time (memory does not grow with the
/// point's length).
#[derive(Debug, Clone, Default)]
struct Summing {
    n: usize,
    busy_sum: f64,
    busy_max: f64,
    softirq_max: f64,
    one_max: f64,
    mem_max: Option<u64>,
}

impl Summing {
    fn add(&mut self, s: &Sample) {
        self.n += 1;
        self.busy_sum += s.busy_cpus;
        self.busy_max = self.busy_max.max(s.busy_cpus);
        self.softirq_max = self.softirq_max.max(s.softirq_cpus);
        let one = s.cpus.iter().map(|c| c.busy).fold(0.0, f64::max);
        self.one_max = self.one_max.max(one);
        self.mem_max = self.mem_max.max(s.mem_used_kb);
    }

    fn summary(&self) -> Option<SampleSummary> {
        (self.n > 0).then(|| SampleSummary {
            samples: self.n,
            busy_cpus_mean: self.busy_sum / self.n as f64,
            busy_cpus_max: self.busy_max,
            softirq_cpus_max: self.softirq_max,
            one_cpu_busy_max: self.one_max,
            mem_used_kb_max: self.mem_max,
        })
    }
}

/// Samples of several hosts, taken about every `every_ns` of the
/// caller's clock (the controller's: hosts' clocks may differ from it).
#[derive(Debug)]
pub struct Sampler {
    every_ns: u64,
    /// Per host: the last snapshot, when it was taken, the last sample
    /// and the summary so far.
    hosts: BTreeMap<String, (Snapshot, u64, Option<Sample>, Summing)>,
}

impl Sampler {
    pub fn new(every_ns: u64) -> Sampler {
        Sampler {
            every_ns,
            hosts: BTreeMap::new(),
        }
    }

    /// Starts sampling `host` from `first`, taken at `at_ns`.
    pub fn start(&mut self, host: &str, first: Snapshot, at_ns: u64) {
        self.hosts
            .insert(host.into(), (first, at_ns, None, Summing::default()));
    }

    /// The hosts due for their next snapshot at `now_ns`.
    pub fn due(&self, now_ns: u64) -> Vec<String> {
        self.hosts
            .iter()
            .filter(|(_, (_, at, _, _))| now_ns.saturating_sub(*at) >= self.every_ns)
            .map(|(h, _)| h.clone())
            .collect()
    }

    /// Adds `host`'s next snapshot, taken at `at_ns`; the new sample, if
    /// any.
    pub fn add(&mut self, host: &str, next: Snapshot, at_ns: u64) -> Option<&Sample> {
        let (last, at, newest, sum) = self.hosts.get_mut(host)?;
        *at = at_ns;
        let s = sample(last, &next)?;
        *last = next;
        sum.add(&s);
        *newest = Some(s);
        newest.as_ref()
    }

    /// Each host's summary (hosts without a sample left out).
    pub fn summaries(&self) -> BTreeMap<String, SampleSummary> {
        self.hosts
            .iter()
            .filter_map(|(h, (_, _, _, sum))| Some((h.clone(), sum.summary()?)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::counters::Iface;

    fn cpu(name: &str, user: u64, system: u64, idle: u64, softirq: u64) -> CpuTimes {
        CpuTimes {
            cpu: name.into(),
            user,
            system,
            idle,
            softirq,
            ..CpuTimes::default()
        }
    }

    fn snap(t: u64, c0: CpuTimes, c1: CpuTimes, rx: u64, avail: u64) -> Snapshot {
        let mut s = Snapshot {
            unix_ns: t,
            cpus: vec![cpu("cpu", 0, 0, 0, 0), c0, c1],
            ..Snapshot::default()
        };
        s.meminfo.insert("MemTotal".into(), 1000);
        s.meminfo.insert("MemAvailable".into(), avail);
        s.ifaces.insert(
            "eth1".into(),
            Iface {
                sysfs: [("rx_packets", rx), ("rx_bytes", rx * 100)]
                    .map(|(k, v)| (k.to_string(), v))
                    .into(),
                ..Iface::default()
            },
        );
        s
    }

    #[test]
    fn busy_fractions_rates_and_memory() {
        let a = snap(
            1_000_000_000,
            cpu("cpu0", 100, 100, 100, 0),
            cpu("cpu1", 0, 0, 0, 0),
            0,
            900,
        );
        // Over 2 s: cpu0 50 user, 20 system, 30 softirq of 200 ticks (idle
        // 100); cpu1 all idle; 20,000 packets in.
        let b = snap(
            3_000_000_000,
            cpu("cpu0", 150, 120, 200, 30),
            cpu("cpu1", 0, 0, 200, 0),
            20_000,
            600,
        );
        let s = sample(&a, &b).unwrap();
        assert_eq!(s.interval_ns, 2_000_000_000);
        assert_eq!(s.cpus.len(), 2);
        let c0 = &s.cpus[0];
        assert_eq!(
            (c0.user, c0.system, c0.softirq, c0.busy),
            (0.25, 0.1, 0.15, 0.5)
        );
        assert_eq!(s.cpus[1].busy, 0.0);
        assert_eq!((s.busy_cpus, s.softirq_cpus), (0.5, 0.15));
        assert_eq!(s.mem_used_kb, Some(400));
        assert_eq!(s.ifaces["eth1"].rx_pps, 10_000.0);
        assert_eq!(s.ifaces["eth1"].rx_bps, 8_000_000.0);
        assert!(sample(&b, &a).is_none());
        let sum = summarize(&[s.clone(), s]).unwrap();
        assert_eq!(
            (sum.samples, sum.busy_cpus_mean, sum.one_cpu_busy_max),
            (2, 0.5, 0.5)
        );
        assert_eq!(sum.mem_used_kb_max, Some(400));
        assert!(summarize(&[]).is_none());
    }

    #[test]
    fn the_sampler_takes_a_host_when_due() {
        let z = || cpu("cpu0", 0, 0, 0, 0);
        let mut s = Sampler::new(1_000_000_000);
        s.start("rx", snap(5_000_000_000, z(), z(), 0, 0), 100);
        assert!(s.due(900_000_099).is_empty());
        assert_eq!(s.due(1_000_000_100), vec!["rx".to_string()]);
        let next = snap(6_000_000_000, cpu("cpu0", 1, 0, 1, 0), z(), 10, 0);
        assert!(s.add("rx", next, 1_000_000_100).is_some());
        assert!(s.due(1_500_000_000).is_empty());
        assert!(s.add("nohost", Snapshot::default(), 0).is_none());
        assert_eq!(s.summaries()["rx"].samples, 1);
    }
}
