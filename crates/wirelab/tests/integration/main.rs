//! wirelab's integration tests, one binary: the CLI's behaviour, the
//! architecture's rules, the error sources, the fuzz corpora replayed, and
//! the end-to-end tests (`e2e_*`) that run the real binary in network
//! namespaces. One test binary rather than one per file: each would link
//! the whole dependency graph again. Run one module with
//! `cargo test --release -p wirelab --test integration e2e_metrics::`.

mod common;

mod architecture;
mod cli;
mod e2e_agent;
mod e2e_capture;
mod e2e_clock;
mod e2e_compare;
mod e2e_counters;
mod e2e_crash;
mod e2e_egress;
mod e2e_emulate;
mod e2e_emulate_stages;
mod e2e_emulate_verify;
mod e2e_env;
mod e2e_export;
mod e2e_hostile_pcap;
mod e2e_limits;
mod e2e_metrics;
mod e2e_netns;
mod e2e_pcap_analyze;
mod e2e_replay;
mod e2e_report;
mod e2e_rtp;
mod e2e_run;
mod e2e_run_ssh;
mod e2e_socket;
mod e2e_stress;
mod e2e_trace;
mod error_sources;
mod fuzz_corpus;
mod output_style;
