//! The files `apply` and `rollback` lock: the library's `native::files::locks`, which the
//! Python binding's deploy step shares.

pub use deploy_gate::native::files::locks::*;
