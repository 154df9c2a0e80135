//! The error for an input file that cannot be used (now in [`crate::input`]; this path stays
//! for code written against it).

pub use crate::input::InputError;
