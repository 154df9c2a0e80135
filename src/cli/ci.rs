//! `evaluate --markdown FILE --junit FILE`: the report's Markdown summary and its JUnit XML,
//! written next to the JSON report for a CI job to publish.

use crate::cli::exit::write_output;
use crate::render::{junit, markdown};
use crate::report::GateReport;
use anyhow::{anyhow, Result};
use clap::Args;
use std::path::PathBuf;

#[derive(Args)]
pub(crate) struct CiOutputs {
    /// Also write the Markdown summary to FILE (the page's "Copy Markdown summary", the same text).
    #[arg(long, value_name = "FILE")]
    markdown: Option<PathBuf>,
    /// Also write the report as JUnit XML to FILE: a test case per case, a regression a failure,
    /// a missing or errored verdict an error, the decision in the suite's properties.
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// A review file (`deploy-gate/review/v1`, as the page exports it): the Markdown summary and
    /// the HTML report list its marked cases with their notes. The JSON report stays as it is.
    #[arg(long, value_name = "FILE")]
    review: Option<PathBuf>,
}

impl CiOutputs {
    /// Writes the files asked for (before the JSON report, so a failure leaves no report).
    /// `listing`: `--review`'s marks read against the report ([`CiOutputs::review_listing`]).
    pub(crate) fn write(
        &self,
        report: &GateReport,
        json: &str,
        out: Option<&std::path::Path>,
        listing: Option<&crate::review::Listing>,
    ) -> Result<()> {
        if let (Some(a), Some(b)) = (&self.markdown, &self.junit) {
            if a == b {
                return Err(anyhow!("--markdown and --junit both name {}", a.display()));
            }
        }
        for (flag, path) in [("--markdown", &self.markdown), ("--junit", &self.junit)] {
            if let (Some(path), Some(out)) = (path, out) {
                if path == out {
                    return Err(anyhow!("{flag} and --out both name {}", path.display()));
                }
            }
        }
        if let Some(path) = &self.markdown {
            let text = markdown::markdown_reviewed(json, listing).map_err(|e| anyhow!("{e}"))?;
            write_output(Some(path), text.as_bytes())?;
        }
        if let Some(path) = &self.junit {
            write_output(Some(path), junit::report_junit(report).as_bytes())?;
        }
        Ok(())
    }

    /// Whether `--review` was given.
    pub(crate) fn review_given(&self) -> bool {
        self.review.is_some()
    }

    /// Whether `--markdown` was given.
    pub(crate) fn markdown_asked(&self) -> bool {
        self.markdown.is_some()
    }

    /// `--review`'s marks read against the report (its JSON text).
    pub(crate) fn review_listing(&self, json: &str) -> Result<Option<crate::review::Listing>> {
        let Some(path) = &self.review else {
            return Ok(None);
        };
        let (_, review) = crate::cli::files::read_review(path)?;
        crate::review::Listing::of(&review, json)
            .map(Some)
            .map_err(|e| anyhow!("{}: {e}", path.display()))
    }
}
