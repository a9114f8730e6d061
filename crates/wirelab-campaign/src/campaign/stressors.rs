//! A point's stressors (`[[stressor]]`): each runs as `wirelab stress`
//! under its host's agent, started before the settle time and seen up (its
//! `--ready` file), watched while the flows run (one that ends makes the
//! point fail, naming it), and stopped after the flows have drained. Its
//! report (CPU seconds of everything it ran) goes into `point.json`, its
//! output to `points/<id>/stressors/<host>.log`. `wirelab stress` stops
//! and reaps its own processes; the agent's dead-man rule and
//! PR_SET_PDEATHSIG cover a controller or agent that dies.

use super::{agent, exit_text, fetch, PointRun, RunError, READY_TIMEOUT};
use crate::bundle::PointStressor;
use crate::control::Control;
use crate::expr::Expr;
use crate::sweep::Point;
use std::path::Path;
use std::time::{Duration, Instant};
use wirelab_agent::proto::Exit;
use wirelab_host::stress::{self, StressorSpec};

/// One stressor started for a point.
pub(super) struct Running {
    spec: StressorSpec,
    /// Its place among the file's `[[stressor]]`s, from 1.
    n: usize,
    tag: String,
    /// Its end, once seen.
    exit: Option<Exit>,
}

impl Running {
    fn name(&self) -> String {
        let kind = kind_name(&self.spec);
        format!("stressor {} ({kind}) on {}", self.n, self.spec.host)
    }
}

/// The point's stressors.
pub(super) struct Stressors(Vec<Running>);

impl Stressors {
    /// Host and kind of each stressor started.
    pub(super) fn up(&self) -> Vec<(String, String)> {
        self.0
            .iter()
            .map(|r| (r.spec.host.clone(), kind_name(&r.spec)))
            .collect()
    }
}

fn kind_name(s: &StressorSpec) -> String {
    match (s.preset, s.kind) {
        (Some(_), _) => "realistic".into(),
        (None, Some(k)) => stress::Load::of_kind(k).name().into(),
        (None, None) => "cpu".into(),
    }
}

/// Starts the stressors of `point` whose `when` holds and waits until
/// each is up.
pub(super) fn start(
    run: &mut PointRun<'_, '_>,
    control: &Control,
    point: &Point,
) -> Result<Stressors, RunError> {
    let mut list = vec![];
    for (i, s) in control.stressors.iter().enumerate() {
        if let Some(w) = &s.when {
            let holds = Expr::parse(w)
                .and_then(|e| e.eval(&point.params))
                .map_err(|e| RunError::Setup(format!("stressor {} when {w:?}: {e}", i + 1)))?;
            if !holds {
                continue;
            }
        }
        let to = match &s.target {
            Some(t) => Some(run.hosts.target(&s.host, t)?),
            None => None,
        };
        let tag = format!("{}-stress{}", point.id, i + 1);
        let args = stress::job_for(s, to.as_deref(), &format!("{tag}.ready")).argv();
        run.spawn(&s.host, &tag, args)?;
        list.push(Running {
            spec: s.clone(),
            n: i + 1,
            tag,
            exit: None,
        });
    }
    for r in &list {
        let t0 = Instant::now();
        loop {
            let a = run.agent(&r.spec.host)?;
            if let Some(e) = a
                .wait(&r.tag, Duration::ZERO)
                .map_err(agent(&r.spec.host))?
            {
                return Err(RunError::Setup(format!(
                    "{} exited before it was up: {}",
                    r.name(),
                    exit_text(&e)
                )));
            }
            let ready = a
                .read_small(&format!("{}.ready", r.tag), 4096)
                .map_err(agent(&r.spec.host))?;
            if ready.is_some() {
                break;
            }
            if t0.elapsed() > READY_TIMEOUT {
                return Err(RunError::Setup(format!(
                    "{} was not up after {} s",
                    r.name(),
                    READY_TIMEOUT.as_secs()
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    Ok(Stressors(list))
}

impl Stressors {
    /// Why the point fails, if a stressor has ended while it ran.
    pub(super) fn check(&mut self, run: &mut PointRun<'_, '_>) -> Result<Option<String>, RunError> {
        for r in self.0.iter_mut().filter(|r| r.exit.is_none()) {
            let a = run.agent(&r.spec.host)?;
            if let Some(e) = a
                .wait(&r.tag, Duration::ZERO)
                .map_err(agent(&r.spec.host))?
            {
                let why = format!("{} ended during the point: {}", r.name(), exit_text(&e));
                r.exit = Some(e);
                return Ok(Some(why));
            }
        }
        Ok(None)
    }

    /// Stops every stressor, fetches its log into `pdir`; the records for
    /// `point.json` and why the point fails, if a stressor failed.
    pub(super) fn stop(
        mut self,
        run: &mut PointRun<'_, '_>,
        pdir: &Path,
    ) -> Result<(Vec<PointStressor>, Option<String>), RunError> {
        let mut out = vec![];
        let mut failure = None;
        let mut logs: Vec<String> = vec![];
        for r in &mut self.0 {
            let e = match r.exit.take() {
                Some(e) => e,
                None => run.stop(&r.spec.host, &r.tag)?,
            };
            // `<host>.log`, `<host>-2.log` for a second stressor there.
            let same = logs.iter().filter(|h| **h == r.spec.host).count();
            logs.push(r.spec.host.clone());
            let log = match same {
                0 => format!("stressors/{}.log", r.spec.host),
                k => format!("stressors/{}-{}.log", r.spec.host, k + 1),
            };
            let got = fetch(
                run,
                &r.spec.host,
                &format!("{}.err", r.tag),
                &pdir.join(&log),
            )?;
            let report: Option<stress::Report> = serde_json::from_str(&e.stdout).ok();
            if e.code != Some(0) && failure.is_none() {
                failure = Some(format!("{} failed: {}", r.name(), exit_text(&e)));
            }
            out.push(PointStressor {
                host: r.spec.host.clone(),
                kind: kind_name(&r.spec),
                user_s: report.as_ref().map(|x| x.user_s),
                system_s: report.as_ref().map(|x| x.system_s),
                exit: e.code,
                log: got.then_some(log),
                report: serde_json::from_str(&e.stdout).ok(),
            });
        }
        Ok((out, failure))
    }
}
