//! Text renderings of a report for CI systems and pull requests.
pub mod junit;
pub mod markdown;
pub mod number;
#[cfg(test)]
mod testing;
