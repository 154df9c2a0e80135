//! Replacing a file durably and atomically: the library's `native::files::replace`, which the
//! Python binding's deploy step shares.

pub use deploy_gate::native::files::replace::*;
