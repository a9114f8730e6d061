//! wirelab engine
