//! `diff`: what changed between two evaluations (reports or signed decisions), as JSON and, on
//! request, Markdown, HTML and JUnit; the decision's change is the exit code. Reads only.

use crate::attest::keys::read_public_pem;
use crate::attest::{Limits, DEFAULT_MAX_STATEMENT_BYTES};
use crate::cli::exit::{write_output, EXIT_CHANGED, EXIT_OK};
use crate::cli::files::read_key;
use crate::cli::trust::parse_size;
use crate::diff::{self, read_document, GateDiff, Trust};
use crate::render::diff::{html, junit, markdown};
use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use std::path::{Path, PathBuf};

#[derive(Args)]
pub struct DiffArgs {
    /// The earlier evaluation: a report (`evaluate --out`) or a signed decision (`decision.dsse.json`).
    before: PathBuf,
    /// The later evaluation: a report or a signed decision.
    after: PathBuf,
    /// Write the diff JSON to FILE instead of stdout.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Also write the diff as Markdown (a pull-request comment) to FILE.
    #[arg(long, value_name = "FILE")]
    markdown: Option<PathBuf>,
    /// Also write the diff as one standalone HTML file to FILE.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Also write JUnit XML to FILE: a failing test case per pass→fail flip of the new model.
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// A trusted public key (SPKI PEM) a signed decision must verify against; repeat for several.
    /// A signed decision is refused without one. (Its age and target are not checked.)
    #[arg(long, value_name = "PUB.pem")]
    trusted_key: Vec<PathBuf>,
    /// How many distinct trusted keys must have signed each signed decision.
    #[arg(long, value_name = "N", default_value_t = 1)]
    threshold: usize,
    /// The review file (`deploy-gate/review/v1`) of the earlier evaluation: with
    /// --review-after, the diff lists the cases whose mark or note changed. A side signed with a
    /// review must be given the file it pins.
    #[arg(long, value_name = "FILE", requires = "review_after")]
    review_before: Option<PathBuf>,
    /// The review file of the later evaluation.
    #[arg(long, value_name = "FILE", requires = "review_before")]
    review_after: Option<PathBuf>,
    /// The largest statement accepted in a signed decision. Default 64M.
    #[arg(long, value_name = "SIZE", default_value_t = DEFAULT_MAX_STATEMENT_BYTES, value_parser = parse_size, hide_default_value = true)]
    max_statement_size: usize,
}

/// The same file, by device and inode where the platform has them (a link to an input is the
/// input), else by path.
fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        #[cfg(unix)]
        (Ok(x), Ok(y)) => {
            use std::os::unix::fs::MetadataExt;
            x.dev() == y.dev() && x.ino() == y.ino()
        }
        _ => a == b,
    }
}

/// Refuses outputs that would overwrite an input or each other.
fn check_outputs(args: &DiffArgs) -> Result<()> {
    let outputs: Vec<(&str, &PathBuf)> = [
        ("--out", &args.out),
        ("--markdown", &args.markdown),
        ("--html", &args.html),
        ("--junit", &args.junit),
    ]
    .into_iter()
    .filter_map(|(flag, p)| p.as_ref().map(|p| (flag, p)))
    .collect();
    for (i, (flag, path)) in outputs.iter().enumerate() {
        for input in [&args.before, &args.after] {
            if same_file(path, input) {
                bail!(
                    "{flag} names the input {}: diff never writes to its inputs",
                    input.display()
                );
            }
        }
        for (other, p) in &outputs[..i] {
            if p == path || same_file(p, path) {
                bail!("{other} and {flag} both name {}", path.display());
            }
        }
    }
    Ok(())
}

fn read_side(path: &Path, trust: Option<&Trust<'_>>) -> Result<diff::Evaluation> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    read_document(&path.display().to_string(), &bytes, trust).map_err(|e| match e.problem {
        diff::Problem::NoTrustedKeys => anyhow!(
            "{}: a signed decision is read only once it verifies: give the keys it must verify against (--trusted-key PUB.pem)",
            e.name
        ),
        _ => anyhow!("{e}"),
    })
}

/// `diff`: the diff, a summary on stderr, and 0 (same decision) or 5 (changed) as the exit code.
pub fn diff_cmd(args: &DiffArgs) -> Result<u8> {
    check_outputs(args)?;
    let mut keys = Vec::new();
    for path in &args.trusted_key {
        keys.push(read_public_pem(&read_key(path, "trusted key")?).map_err(|e| anyhow!("{}: {e}", path.display()))?);
    }
    let trust = Trust {
        keys: &keys,
        threshold: args.threshold,
        limits: Limits::for_statement_bytes(args.max_statement_size),
    };
    // The two sides are read side by side (a report of 200,000 cases is about 90 MB of JSON);
    // an error of the first is the one reported.
    let (before, after) = std::thread::scope(|s| {
        let after = s.spawn(|| read_side(&args.after, Some(&trust)));
        let before = read_side(&args.before, Some(&trust));
        (before, after.join().expect("reading a side does not panic"))
    });
    let (before, after) = (before?, after?);
    let mut d = diff::diff(&before, &after).map_err(|e| {
        let path = if e.side == "before" { &args.before } else { &args.after };
        anyhow!("{}: {}", path.display(), e.error)
    })?;
    if let (Some(b), Some(a)) = (&args.review_before, &args.review_after) {
        let (b_bytes, a_bytes) = (
            crate::cli::files::read_review_bytes(b)?,
            crate::cli::files::read_review_bytes(a)?,
        );
        let changes = diff::review_changes(
            &d,
            (&b.display().to_string(), &b_bytes),
            (&a.display().to_string(), &a_bytes),
        )
        .map_err(|e| anyhow!("{e}"))?;
        d.review_changes = Some(changes);
    }
    drop((before, after));
    // The renderings first: a failure leaves no diff JSON.
    if let Some(path) = &args.markdown {
        write_output(Some(path), markdown::diff_markdown(&d).as_bytes())?;
    }
    if let Some(path) = &args.html {
        write_output(Some(path), html::diff_html(&d).as_bytes())?;
    }
    if let Some(path) = &args.junit {
        write_output(Some(path), junit::diff_junit(&d).as_bytes())?;
    }
    write_output(args.out.as_deref(), d.to_json().as_bytes())?;
    print_summary(&d);
    Ok(if d.changed() { EXIT_CHANGED } else { EXIT_OK })
}

fn print_summary(d: &GateDiff) {
    let c = &d.decision;
    let rests = crate::render::diff::rests_on_text(d);
    if c.changed {
        eprintln!(
            "deploy-gate: the decision CHANGED: {} → {} ({rests})",
            c.before, c.after
        );
    } else {
        eprintln!("deploy-gate: the decision is unchanged: {} ({rests})", c.after);
    }
    for (label, s) in [("before", &d.before), ("after", &d.after)] {
        let source = match s.source {
            diff::Source::Report => "report".to_owned(),
            diff::Source::Signed => format!("signed, verified (key id {})", s.signers.join(", ")),
        };
        eprintln!(
            "  {label}:{} {source}; {} case(s); {}; {}",
            if label == "after" { " " } else { "" },
            s.num_cases,
            crate::render::diff::evidence_text(s),
            s.decision.reason
        );
    }
    if d.policy.is_empty() {
        eprintln!("  policy:  the same");
    } else {
        let fields: Vec<String> = d
            .policy
            .iter()
            .map(|p| format!("{} {} → {}", p.field, p.before, p.after))
            .collect();
        eprintln!("  policy:  {}", fields.join("; "));
    }
    let changed = d.inputs.iter().filter(|i| !i.same).count();
    eprintln!("  inputs:  {} of {} differ", changed, d.inputs.len());
    let k = &d.cases;
    eprintln!(
        "  cases:   {} in common, {} only before, {} only after",
        k.common,
        k.only_before.len(),
        k.only_after.len()
    );
    for (m, n) in [("new", &k.counts.new), ("old", &k.counts.old)] {
        eprintln!(
            "  {m} model: {} pass→fail, {} fail→pass, {} verdict text(s) changed",
            n.pass_to_fail, n.fail_to_pass, n.verdict_changed
        );
    }
    if let Some(g) = &d.guardrails {
        eprintln!(
            "  guardrails: {} added, removed or with another outcome; {} the same",
            g.changed.len(),
            g.unchanged
        );
        for c in &g.changed {
            let side = |s: Option<&diff::GuardrailSide>| crate::render::diff::guardrail_side(s, |id| format!("{id:?}"));
            eprintln!(
                "    {}: {} → {}",
                c.criterion,
                side(c.before.as_ref()),
                side(c.after.as_ref())
            );
        }
    }
    if !d.warnings.is_empty() {
        eprintln!("  warnings: {}", d.warnings.join("; "));
    }
}
