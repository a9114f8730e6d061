pub mod placeholder_never_committed {}
