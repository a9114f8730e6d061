use super::*;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn identical_samples_give_an_interval_around_zero() {
    let v = [1.0, 2.0, 3.0];
    let (lo, hi) = bootstrap_ci(&v, &v, RESAMPLES, 7, CONFIDENCE).unwrap();
    assert!(lo < 0.0 && hi > 0.0, "[{lo}, {hi}]");
    // Resampled means of {1, 2, 3} lie in [1, 3]: differences in [-2, 2].
    assert!(lo >= -2.0 && hi <= 2.0);
    assert_eq!(cohens_d(&v, &v), Some(0.0));
    // No spread and no difference: the interval is [0, 0], not significant.
    assert_eq!(
        bootstrap_ci(&[5.0, 5.0], &[5.0, 5.0], 100, 1, CONFIDENCE),
        Some((0.0, 0.0))
    );
}

#[test]
fn separated_samples_are_significant_with_the_sign_of_b_minus_a() {
    let (a, b) = ([1.0, 2.0, 3.0], [11.0, 12.0, 13.0]);
    let (lo, hi) = bootstrap_ci(&a, &b, RESAMPLES, 7, CONFIDENCE).unwrap();
    // Every resampled difference lies in [11 − 3, 13 − 1] = [8, 12].
    assert!(
        (8.0..10.0).contains(&lo) && hi > 10.0 && hi <= 12.0,
        "[{lo}, {hi}]"
    );
    // sd 1 on each side: d = 10 / 1.
    assert_eq!(cohens_d(&a, &b), Some(10.0));
    let (lo, hi) = bootstrap_ci(&b, &a, RESAMPLES, 7, CONFIDENCE).unwrap();
    assert!(hi < 0.0 && lo >= -12.0, "[{lo}, {hi}]");
    assert_eq!(cohens_d(&b, &a), Some(-10.0));
}

#[test]
fn cohens_d_divides_by_the_pooled_standard_deviation() {
    // a: mean 2, variance 2; b: mean 6, variance 4; pooled variance
    // (1·2 + 2·4) / 3 = 10/3.
    let d = cohens_d(&[1.0, 3.0], &[4.0, 6.0, 8.0]).unwrap();
    assert!(close(d, 4.0 / (10.0f64 / 3.0).sqrt()), "{d}");
    // Neither side varies but the means differ: no d.
    assert_eq!(cohens_d(&[1.0, 1.0], &[2.0, 2.0]), None);
    assert_eq!(cohens_d(&[1.0], &[2.0, 3.0]), None);
}

#[test]
fn small_samples_widen_the_tails() {
    // 3 a side, equal spread: Welch df 4, t = 2.776; f = √(3/2); Φ(−3.40).
    let tail = expanded_tail(&[1.0, 2.0, 3.0], &[2.0, 3.0, 4.0], CONFIDENCE).unwrap();
    assert!((tail - 3.37e-4).abs() < 0.2e-4, "{tail}");
    // Many values: close to the nominal 2.5 %.
    let big: Vec<f64> = (0..400).map(|i| f64::from(i % 7)).collect();
    let tail = expanded_tail(&big, &big, CONFIDENCE).unwrap();
    assert!((0.024..0.025).contains(&tail), "{tail}");
    assert!(close(
        expanded_tail(&[1.0, 1.0], &[2.0, 2.0], CONFIDENCE).unwrap(),
        0.025
    ));
    assert_eq!(expanded_tail(&[1.0], &[2.0, 2.0], CONFIDENCE), None);
}

#[test]
fn overlapping_small_samples_are_not_significant() {
    // Welch's t gives p ≈ 0.09 here; the plain percentile interval of 3 a
    // side excludes 0, the expanded one does not.
    let (a, b) = ([1000.0, 1030.0, 1060.0], [1040.0, 1110.0, 1180.0]);
    let (lo, hi) = bootstrap_ci(&a, &b, RESAMPLES, 1, CONFIDENCE).unwrap();
    assert!(lo < 0.0 && hi > 0.0, "[{lo}, {hi}]");
}

/// Two samples of 3 that do not overlap: every bootstrap resample stays
/// inside the data's range, so its interval excludes 0 at any confidence;
/// Welch's t interval at 99.9 % does not, and the row's interval is never
/// narrower than it.
#[test]
fn separated_small_samples_keep_the_t_intervals_level() {
    let (a, b) = ([1000.0, 1010.0, 1020.0], [1025.0, 1035.0, 1045.0]);
    let strict = 0.999;
    let (lo, _) = bootstrap_ci(&a, &b, RESAMPLES, 1, strict).unwrap();
    assert!(lo > 0.0, "the bootstrap alone: {lo}");
    // d = 25, SE = √(100/3 + 100/3) = 8.165, t(0.9995, 4) = 8.610.
    let (tl, th) = welch_ci(&a, &b, strict).unwrap();
    let t = (th - 25.0) / (200.0f64 / 3.0).sqrt();
    assert!(
        (t - 8.610).abs() < 1e-3 && close(25.0 - tl, th - 25.0),
        "[{tl}, {th}]"
    );
    let rows = |conf| {
        let mk = |l: &str, v: &[f64]| {
            let rows: Vec<SummaryRow> = v
                .iter()
                .enumerate()
                .map(|(i, x)| row(l, "udp", i as u32, 0.01, *x))
                .collect();
            rows
        };
        let (ra, rb) = (mk("1%", &a), mk("3%", &b));
        let fixed = fixed_params(&[&ra, &rb]);
        let c = compare(
            &[samples("A", &ra, &fixed), samples("B", &rb, &fixed)],
            &Settings {
                confidence: conf,
                ..Settings::default()
            },
        );
        c.rows
            .into_iter()
            .find(|r| r.metric == Metric::OwdMeanNs)
            .unwrap()
    };
    assert!(!rows(strict).significant);
    assert!(rows(0.95).significant);
    // Zero spread on both sides: the difference itself, significant.
    assert_eq!(welch_ci(&[2.0, 2.0], &[3.0, 3.0], strict), Some((1.0, 1.0)));
}

#[test]
fn quantiles_interpolate_between_order_statistics() {
    let v = [0.0, 1.0, 2.0, 3.0, 4.0];
    assert!(close(quantile(&v, 0.25), 1.0));
    assert!(close(quantile(&v, 0.1), 0.4));
    assert!(close(quantile(&v, 1.0), 4.0));
    assert!(close(quantile(&[7.0], 0.5), 7.0));
}

fn row(loss: &str, socket: &str, rep: u32, loss_ratio: f64, owd: f64) -> SummaryRow {
    let mut params = BTreeMap::new();
    params.insert("loss".to_string(), ParamValue::Str(loss.into()));
    params.insert("socket".to_string(), ParamValue::Str(socket.into()));
    let json = serde_json::json!({
        "point": format!("{loss}-{socket}-{rep}"), "repetition": rep, "status": "done",
        "reason": null, "flow": "probe", "sent": 2000, "received": 1980, "lost": 20,
        "lost_by_sequence": 20, "planned": 2000, "lost_by_plan": 20,
        "loss_ratio": loss_ratio, "throughput_bps": 1.6e6, "rate_pps": 1000.0,
        "owd_mean_ns": owd, "owd_p99_ns": null, "owd_p999_ns": null, "owd_max_ns": null,
        "owd_min_ns": null, "owd_offset_ns": null, "owd_uncertainty_ns": null,
        "ipdv_p99_abs_ns": null, "jitter_ns": null, "reordered": null, "duplicates": null,
        "loss_bursts": null, "max_loss_burst": null, "lost_sender": null, "lost_path": null,
        "lost_rx_nic": null, "lost_rx_stack": null, "lost_unexplained": null,
        "timer_misses": null, "rtt_mean_ns": null, "rtt_stdev_ns": null, "rtt_p99_ns": null,
        "rtt_max_ns": null, "error": null
    });
    let mut r: SummaryRow = serde_json::from_value(json).unwrap();
    r.params = params;
    r
}

/// Bundle A: loss 1 % at udp and raw; bundle B: loss 3 % at udp only, one
/// repetition aborted. OWD the same on both.
fn two_bundles() -> (Vec<SummaryRow>, Vec<SummaryRow>) {
    let a = vec![
        row("1%", "udp", 0, 0.010, 1000.0),
        row("1%", "udp", 1, 0.011, 1010.0),
        row("1%", "udp", 2, 0.009, 990.0),
        row("1%", "raw", 0, 0.010, 1000.0),
    ];
    let mut b = vec![
        row("3%", "udp", 0, 0.030, 1005.0),
        row("3%", "udp", 1, 0.031, 995.0),
        row("3%", "udp", 2, 0.029, 1000.0),
        row("3%", "udp", 3, 0.5, 9999.0),
    ];
    b[3].status = PointStatus::Aborted;
    (a, b)
}

#[test]
fn bundles_are_matched_by_the_parameters_they_vary() {
    let (a, b) = two_bundles();
    let fixed = fixed_params(&[&a, &b]);
    assert_eq!(fixed.into_iter().collect::<Vec<_>>(), vec!["loss"]);
    let fixed = fixed_params(&[&a, &b]);
    let sa = samples("A", &a, &fixed);
    let sb = samples("B", &b, &fixed);
    // The aborted repetition gives no values.
    assert_eq!(
        sb.points["socket=udp probe"].values[&Metric::LossRatio].len(),
        3
    );
    let c = compare(&[sa, sb], &Settings::default());
    assert_eq!(c.only_in.len(), 1);
    assert_eq!(c.only_in[0].bundles, vec!["A"]);
    assert_eq!(c.only_in[0].params["socket"], ParamValue::Str("raw".into()));
    let get = |m: Metric| c.rows.iter().find(|r| r.metric == m).unwrap();
    let loss = get(Metric::LossRatio);
    assert!(loss.significant && loss.difference > 0.0);
    assert!(close(loss.difference, 0.02));
    assert!(close(loss.relative.unwrap(), 2.0));
    assert_eq!((loss.a.n, loss.b.n), (3, 3));
    let owd = get(Metric::OwdMeanNs);
    assert!(!owd.significant, "{owd:?}");
    // Constant throughput on both sides: a zero difference, not significant.
    let tp = get(Metric::ThroughputBps);
    assert_eq!((tp.ci, tp.significant), (Some([0.0, 0.0]), false));
    assert_eq!(tp.effect_size, Some(0.0));
    // Sorted by |d|: the loss first.
    assert_eq!(c.rows[0].metric, Metric::LossRatio);
    // A difference without spread (a deterministic emulator's loss) ranks
    // above every d.
    let mut fixed_loss = loss.clone();
    fixed_loss.effect_size = None;
    fixed_loss.ci = Some([0.02, 0.02]);
    assert_eq!(fixed_loss.rank(), f64::INFINITY);
    fixed_loss.ci = None;
    assert_eq!(fixed_loss.rank(), -1.0);
    let info = bundle_info("B", "b", &b, &fixed_params(&[&a, &b]));
    assert_eq!((info.rows_done, info.rows), (3, 4));
    assert_eq!(info.fixed["loss"], ParamValue::Str("3%".into()));
}

#[test]
fn one_value_a_side_needs_repetitions() {
    let a = vec![row("1%", "udp", 0, 0.01, 1000.0)];
    let b = vec![row("3%", "udp", 0, 0.03, 1000.0)];
    let fixed = fixed_params(&[&a, &b]);
    let c = compare(
        &[samples("A", &a, &fixed), samples("B", &b, &fixed)],
        &Settings::default(),
    );
    assert!(!c.rows.is_empty());
    for r in &c.rows {
        assert_eq!(r.ci, None);
        assert!(!r.significant);
        assert_eq!(r.effect_size, None);
        assert_eq!(r.note.as_deref(), Some("needs repetitions"));
    }
}

#[test]
fn a_seed_gives_the_same_intervals_whatever_the_other_rows() {
    let (a, b) = two_bundles();
    let fixed = fixed_params(&[&a, &b]);
    let run = |a: &[SummaryRow], seed| {
        compare(
            &[samples("A", a, &fixed), samples("B", &b, &fixed)],
            &Settings {
                seed,
                resamples: 1000,
                ..Settings::default()
            },
        )
    };
    let one = run(&a, 3);
    assert_eq!(one, run(&a, 3));
    let ci = |c: &Comparison| {
        c.rows
            .iter()
            .find(|r| r.metric == Metric::OwdMeanNs)
            .unwrap()
            .ci
    };
    // Without the point only A holds, the row's interval is the same.
    assert_eq!(ci(&one), ci(&run(&a[..3], 3)));
    // Another seed, other resamples.
    let (x, y) = ([1.3, 2.9, 0.4, 5.1, 3.3], [2.2, 7.5, 4.1, 0.9, 6.6]);
    assert_ne!(
        bootstrap_ci(&x, &y, 1000, 3, CONFIDENCE),
        bootstrap_ci(&x, &y, 1000, 4, CONFIDENCE)
    );
}

#[test]
fn labels_run_through_the_alphabet() {
    assert_eq!(label(0), "A");
    assert_eq!(label(25), "Z");
    assert_eq!(label(26), "#27");
}
