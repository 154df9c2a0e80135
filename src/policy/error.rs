//! The one error of a policy's fields: which field, and what is wrong with it.

/// An invalid policy field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct PolicyError {
    /// The field as it was spelt (`min_samples`, `task_tol`, an unknown key, …).
    pub field: String,
    /// What is wrong, naming the field (the text the CLI and the page show).
    pub message: String,
}

impl PolicyError {
    pub(crate) fn new(field: &str, message: impl Into<String>) -> Self {
        PolicyError {
            field: field.to_owned(),
            message: message.into(),
        }
    }
}
