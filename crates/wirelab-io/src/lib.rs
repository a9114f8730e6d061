//! wirelab I/O
