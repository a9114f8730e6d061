//! `wirelab emulate`'s job from what its options give: the two
//! directions' stage lists, `--rule FILTER STAGES` pairs, the seed, the
//! decision traces and the control socket. Builds each direction's
//! [`DirModel`] (rules by BPF filter, then the direction's own stages),
//! the control thread's link builder and rule table, and the
//! configuration the log records.

use crate::emulate::ctl::{Builder, CtlRule, CtlSetup, RequestError};
use crate::emulate::recorder::{decision_path, RecorderError};
use crate::emulate::{open_link, DirModel, LinkSetupError, LiveDir, Recorder, RuleLink};
use crate::job::emulate::{EmulateJob, MmLogSetup};
use crate::job::rt::RtSetup;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use thiserror::Error;
use wirelab_io::bpf::{BpfError, BpfProgram};
use wirelab_link::{Direction, LinkConfig, LinkKey, SpecError};

/// A direction's stage list and the option that gave it (named in errors).
#[derive(Debug, Clone)]
pub struct Stages {
    pub flag: &'static str,
    pub stages: String,
}

/// Everything `wirelab emulate` was told.
#[derive(Debug, Clone)]
pub struct EmulateSpec {
    pub a: String,
    pub b: String,
    pub a2b: Stages,
    pub b2a: Stages,
    /// `--rule` values, two each: FILTER (`a2b:`/`b2a:` in front for one
    /// direction), STAGES.
    pub rules: Vec<String>,
    /// Seed of every link whose stages give none.
    pub seed: u64,
    pub ring_frames: u32,
    pub duration: Option<Duration>,
    pub spin_ns: u64,
    pub learn: bool,
    pub rt: RtSetup,
    pub log: Option<PathBuf>,
    pub tap: Option<PathBuf>,
    /// Base name of the decision traces (one per direction and rule).
    pub record_decisions: Option<PathBuf>,
    pub mm_log: Option<PathBuf>,
    pub ctl: Option<PathBuf>,
    /// For the Mahimahi logs' headers.
    pub command_line: String,
}

/// Why the emulator's links cannot be built.
#[derive(Debug, Error)]
pub enum SetupError {
    #[error("{flag} '{stages}': {error}")]
    Stages {
        flag: String,
        stages: String,
        error: Box<SpecError>,
    },
    #[error("{flag}: {error}")]
    Link {
        flag: String,
        error: Box<LinkSetupError>,
    },
    #[error("--rule takes two values: FILTER STAGES")]
    RuleValues,
    #[error(
        "--rule '{filter}': the filter is empty; stages for every frame go in --a2b, --b2a or \
         --both"
    )]
    EmptyFilter { filter: String },
    #[error("--rule: {0}")]
    Filter(BpfError),
    /// A decision trace's name that tells no format.
    #[error("--record-decisions: {0}")]
    DecisionName(RecorderError),
    /// A decision trace that cannot be created.
    #[error("--record-decisions: {0}")]
    Decisions(RecorderError),
}

impl SetupError {
    /// A value the user gave that cannot work (as opposed to a file the
    /// machine cannot create).
    pub fn is_usage(&self) -> bool {
        !matches!(self, SetupError::Decisions(_))
    }
}

/// One `--rule`: its number, directions, filter and stages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleSpec {
    pub rule: u32,
    pub dirs: Vec<Direction>,
    pub filter: String,
    pub stages: String,
}

/// The rules of `--rule` values, two each, numbered from 1.
pub fn rule_specs(values: &[String]) -> Result<Vec<RuleSpec>, SetupError> {
    let mut out = Vec::new();
    for (i, r) in values.chunks(2).enumerate() {
        let [f, stages] = r else {
            return Err(SetupError::RuleValues);
        };
        let f = f.trim();
        let (dirs, filter) = crate::emulate::ctl::split_direction(f);
        if filter.is_empty() {
            return Err(SetupError::EmptyFilter { filter: f.into() });
        }
        out.push(RuleSpec {
            rule: i as u32 + 1,
            dirs,
            filter: filter.to_string(),
            stages: stages.clone(),
        });
    }
    Ok(out)
}

pub fn dir_name(d: Direction) -> &'static str {
    match d {
        Direction::AToB => "a2b",
        Direction::BToA => "b2a",
    }
}

/// A rule's link to build for one direction.
struct NewRule<'a> {
    rule: u32,
    filter: Option<BpfProgram>,
    stages: &'a str,
    dir: Direction,
    /// Just added (a decision trace starts; an updated rule's goes on).
    new: bool,
}

/// What every link is built with.
#[derive(Clone)]
struct Links {
    seed: u64,
    decisions: Option<PathBuf>,
}

impl Links {
    /// One rule's link: stage list, seed, trace file, decision trace.
    fn build(&self, flag: &str, r: NewRule<'_>) -> Result<RuleLink, SetupError> {
        let c = LinkConfig::parse(r.stages).map_err(|error| SetupError::Stages {
            flag: flag.into(),
            stages: r.stages.into(),
            error: Box::new(error),
        })?;
        let key = LinkKey {
            seed: c.seed.unwrap_or(self.seed),
            rule: r.rule,
            direction: r.dir,
        };
        let link = open_link(&c, key).map_err(|error| SetupError::Link {
            flag: flag.into(),
            error: Box::new(error),
        })?;
        let mut l = RuleLink::new(r.rule, r.filter, r.stages, key.seed, link);
        if let (Some(base), false, true) = (&self.decisions, r.stages.trim().is_empty(), r.new) {
            let p =
                decision_path(base, dir_name(r.dir), r.rule).map_err(SetupError::DecisionName)?;
            l = l.record_to(Recorder::create(&p).map_err(SetupError::Decisions)?);
        }
        Ok(l)
    }

    /// Direction `dir`'s model: its rules, then its own stages.
    fn model(
        &self,
        dir: Direction,
        own: &Stages,
        rules: &[RuleSpec],
    ) -> Result<DirModel, SetupError> {
        let mut links = Vec::new();
        for r in rules.iter().filter(|r| r.dirs.contains(&dir)) {
            let f = BpfProgram::compile(&r.filter, 1, 65_535).map_err(SetupError::Filter)?;
            let new = NewRule {
                rule: r.rule,
                filter: Some(f),
                stages: &r.stages,
                dir,
                new: true,
            };
            links.push(self.build(&format!("--rule '{}'", r.filter), new)?);
        }
        let new = NewRule {
            rule: 0,
            filter: None,
            stages: &own.stages,
            dir,
            new: true,
        };
        Ok(DirModel::new(links, self.build(own.flag, new)?))
    }

    /// The control thread's builder of added and updated rules' links; its
    /// errors are the messages the client gets.
    fn builder(self) -> Builder {
        Box::new(move |rule, filter, stages, dir, new| {
            let f = BpfProgram::compile(filter, 1, 65_535).map_err(RequestError::Filter)?;
            let r = NewRule {
                rule,
                filter: Some(f),
                stages,
                dir,
                new,
            };
            let flag = format!("rule {rule} ({})", dir_name(dir));
            self.build(&flag, r)
                .map_err(|e| RequestError::Link(Box::new(e)))
        })
    }
}

fn ctl_rule(r: &RuleSpec) -> CtlRule {
    CtlRule {
        rule: r.rule,
        directions: r.dirs.iter().map(|&d| dir_name(d)).collect(),
        filter: r.filter.clone(),
        stages: r.stages.clone(),
    }
}

impl EmulateSpec {
    /// The job, every link built (trace files read and checked, filters
    /// compiled) before any interface is touched.
    pub fn job(self) -> Result<EmulateJob<DirModel>, SetupError> {
        if let Some(p) = &self.record_decisions {
            decision_path(p, "a2b", 0).map_err(SetupError::DecisionName)?;
        }
        let rules = rule_specs(&self.rules)?;
        let links = Links {
            seed: self.seed,
            decisions: self.record_decisions.clone(),
        };
        let mut a2b = links.model(Direction::AToB, &self.a2b, &rules)?;
        let mut b2a = links.model(Direction::BToA, &self.b2a, &rules)?;
        let live = [Arc::new(LiveDir::default()), Arc::new(LiveDir::default())];
        let ctl = self.ctl.as_ref().map(|path| {
            let (t_ab, r_ab) = std::sync::mpsc::channel();
            let (t_ba, r_ba) = std::sync::mpsc::channel();
            a2b.set_control(r_ab);
            b2a.set_control(r_ba);
            CtlSetup {
                path: path.clone(),
                rules: rules.iter().map(ctl_rule).collect(),
                build: links.clone().builder(),
                to: [t_ab, t_ba],
                live: live.clone(),
            }
        });
        let (s_ab, s_ba) = (&self.a2b.stages, &self.b2a.stages);
        let config = serde_json::json!({
            "a": self.a, "b": self.b,
            "a2b": s_ab, "b2a": s_ba,
            "seed": [a2b.default_link().seed, b2a.default_link().seed],
            "rules": rules.iter().map(ctl_rule).collect::<Vec<_>>(),
        });
        let (a, b) = (&self.a, &self.b);
        let mm_log = self.mm_log.clone().map(|dir| MmLogSetup {
            dir,
            command_line: self.command_line.clone(),
            titles: [
                format!("a2b ({a} -> {b}) [{s_ab}]"),
                format!("b2a ({b} -> {a}) [{s_ba}]"),
            ],
        });
        Ok(EmulateJob {
            a2b,
            b2a,
            ring_frames: self.ring_frames,
            duration: self.duration,
            spin_ns: self.spin_ns,
            learn: self.learn,
            rt: self.rt,
            live,
            log: self.log.clone().map(|p| (p, config)),
            tap: self.tap.clone(),
            ctl,
            mm_log,
            a: self.a,
            b: self.b,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn rules_are_numbered_with_their_directions() {
        let r = rule_specs(&values(&[
            "a2b: udp",
            "delay 1ms",
            " tcp ",
            "",
            "b2a:icmp",
            "loss 1%",
        ]))
        .unwrap();
        assert_eq!(r.len(), 3);
        assert_eq!((r[0].rule, r[0].filter.as_str()), (1, "udp"));
        assert_eq!(r[0].dirs, [Direction::AToB]);
        assert_eq!(r[1].dirs, [Direction::AToB, Direction::BToA]);
        assert_eq!((r[1].filter.as_str(), r[1].stages.as_str()), ("tcp", ""));
        assert_eq!(
            (r[2].rule, r[2].dirs.as_slice()),
            (3, &[Direction::BToA][..])
        );
        let e = rule_specs(&values(&["a2b:", "delay 1ms"])).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--rule 'a2b:': the filter is empty; stages for every frame go in --a2b, --b2a or \
             --both"
        );
        assert!(matches!(
            rule_specs(&values(&["udp"])),
            Err(SetupError::RuleValues)
        ));
    }

    fn spec(a2b: &str) -> EmulateSpec {
        EmulateSpec {
            a: "x".into(),
            b: "y".into(),
            a2b: Stages {
                flag: "--a2b",
                stages: a2b.into(),
            },
            b2a: Stages {
                flag: "--b2a",
                stages: String::new(),
            },
            rules: Vec::new(),
            seed: 1,
            ring_frames: 64,
            duration: None,
            spin_ns: 0,
            learn: false,
            rt: RtSetup::default(),
            log: None,
            tap: None,
            record_decisions: None,
            mm_log: None,
            ctl: None,
            command_line: String::new(),
        }
    }

    #[test]
    fn bad_stages_name_their_option_and_a_good_job_keeps_its_seeds() {
        let e = spec("dely 1ms").job().err().unwrap();
        assert!(e.is_usage());
        assert!(e.to_string().starts_with("--a2b 'dely 1ms': "), "{e}");
        let e = spec("trace /nonexistent/t.bin").job().err().unwrap();
        assert!(
            e.to_string().starts_with("--a2b: cannot read trace "),
            "{e}"
        );
        let mut s = spec("delay 1ms seed 7");
        s.record_decisions = Some("/tmp/d.zz".into());
        let e = s.job().err().unwrap();
        assert!(e.to_string().starts_with("--record-decisions: "), "{e}");
        let job = spec("delay 1ms seed 7").job().unwrap();
        assert_eq!(job.a2b.default_link().seed, 7);
        assert_eq!(job.b2a.default_link().seed, 1);
        assert_eq!((job.a.as_str(), job.b.as_str()), ("x", "y"));
    }
}
