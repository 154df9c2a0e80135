//! Renderings of a report for people and CI systems: the standalone HTML report, the Markdown
//! summary for pull requests, JUnit XML, and a case's two answers side by side.
pub mod answers;
mod cost;
pub mod diff;
pub mod evidence;
pub mod guardrails;
pub mod html;
pub mod junit;
pub mod markdown;
pub mod sequential;
#[cfg(test)]
mod testing;
