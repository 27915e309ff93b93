//! `toolcell inspect`: a plugin file's id, version, tools, capabilities, WIT version and
//! digest.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use serde_json::json;

use super::{environment, usage_error};
use crate::artifact::manifest::Manifest;
use crate::artifact::wit_version::WIT_VERSION;
use crate::base::wording::terminal_safe;
use crate::distribution::inspect::{self, Report};
use crate::engine::Options;

#[derive(Args)]
pub(super) struct InspectArgs {
    /// The plugin file (.wasm or .lua).
    file: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

pub(super) fn run(tokio_rt: &tokio::runtime::Runtime, args: InspectArgs) -> ExitCode {
    let engine = match environment::engine(Options::default()) {
        Ok(engine) => engine,
        Err(error) => return usage_error(&error.to_string()),
    };
    let report = match tokio_rt.block_on(inspect::inspect(&args.file, &engine)) {
        Ok(report) => report,
        Err(error) => return usage_error(&error.to_string()),
    };
    if args.json {
        match serde_json::to_string_pretty(&as_json(&report)) {
            Ok(text) => println!("{text}"),
            Err(error) => return usage_error(&format!("cannot encode the report: {error}")),
        }
    } else {
        // The manifest's words are the plugin author's.
        print!("{}", terminal_safe(&as_text(&report)));
    }
    ExitCode::SUCCESS
}

fn as_json(report: &Report) -> serde_json::Value {
    let manifest = match &report.manifest {
        Ok(manifest) => json!({
            "id": manifest.id,
            "version": manifest.version.to_string(),
            "description": manifest.description,
            "author": manifest.about.author,
            "license": manifest.about.license,
            "homepage": manifest.about.homepage,
            "repository": manifest.about.repository,
            "keywords": manifest.about.keywords,
            "requires": manifest.dependencies.requires.iter()
                .map(|requirement| (requirement.id.clone(), json!(requirement.versions.to_string())))
                .collect::<serde_json::Map<_, _>>(),
            "conflicts": manifest.dependencies.conflicts,
            "unknown_keys": manifest.unknown_keys,
            "capabilities": {
                "http": manifest.capabilities.http.to_string(),
                "files": manifest.capabilities.files.as_str(),
                "memory_mib": manifest.capabilities.memory_mib,
                "timeout_ms": manifest.capabilities.timeout_ms,
            },
        }),
        Err(error) => json!({ "error": error }),
    };
    json!({
        "file": report.file.display().to_string(),
        "sha256": report.sha256,
        "size": report.size,
        "kind": report.kind.describe(),
        "compiled": match &report.compiled_by {
            Ok(Some(by)) => json!({ "toolcell": by.toolcell, "functions": by.functions }),
            Ok(None) => serde_json::Value::Null,
            Err(error) => json!({ "error": error }),
        },
        "manifest": manifest,
        "wit": {
            "package": report.wit_version.as_ref().map(|v| format!("toolcell:plugin@{v}")).ok(),
            "host": format!("toolcell:plugin@{WIT_VERSION}"),
            "compatible": report.compatible.is_ok(),
            "error": report.wit_version.as_ref().err().or(report.compatible.as_ref().err()),
        },
        "signatures": match &report.signatures {
            Ok(keys) => json!({ "valid": keys.iter().map(ToString::to_string).collect::<Vec<_>>() }),
            Err(error) => json!({ "error": error }),
        },
        "tools": match &report.tools {
            Ok(tools) => json!(tools.iter().map(|tool| json!({
                "name": tool.name,
                "description": tool.description,
            })).collect::<Vec<_>>()),
            Err(error) => json!({ "error": error }),
        },
        "diagnostics": report.diagnostics.iter().map(|diagnostic| json!({
            "severity": diagnostic.severity.as_str(),
            "code": diagnostic.kind.code(),
            "message": diagnostic.message,
        })).collect::<Vec<_>>(),
    })
}

fn as_text(report: &Report) -> String {
    let mut lines = vec![
        format!("file:         {}", report.file.display()),
        format!("sha256:       {}", report.sha256),
        format!("size:         {} bytes", report.size),
        format!("kind:         {}", report.kind.describe()),
    ];
    match &report.compiled_by {
        Ok(Some(by)) => lines.push(format!(
            "compiled:     by toolcell {}, {} Lua function{}",
            by.toolcell,
            by.functions,
            if by.functions == 1 { "" } else { "s" }
        )),
        Ok(None) => {}
        Err(error) => lines.push(format!("compiled:     {error}")),
    }
    match &report.manifest {
        Ok(manifest) => lines.extend(manifest_lines(manifest)),
        Err(error) => lines.push(format!("manifest:     {error}")),
    }
    lines.push(match (&report.wit_version, &report.compatible) {
        (Ok(version), Ok(())) => format!(
            "wit:          toolcell:plugin@{version} (this toolcell: {WIT_VERSION}, compatible)"
        ),
        (Ok(version), Err(error)) => format!("wit:          toolcell:plugin@{version} ({error})"),
        (Err(error), _) => format!("wit:          {error}"),
    });
    lines.push(match &report.signatures {
        Ok(keys) if keys.is_empty() => "signatures:   none".to_string(),
        Ok(keys) => format!(
            "signatures:   {} (valid)",
            keys.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Err(error) => format!("signatures:   INVALID: {error}"),
    });
    match &report.tools {
        Ok(tools) if tools.is_empty() => lines.push("tools:        none".to_string()),
        Ok(tools) => {
            lines.push("tools:".to_string());
            let width = tools.iter().map(|tool| tool.name.len()).max().unwrap_or(0);
            for tool in tools {
                let summary = tool.description.lines().next().unwrap_or_default();
                lines.push(format!("  {:<width$}  {summary}", tool.name));
            }
        }
        Err(error) => lines.push(format!("tools:        not loaded: {error}")),
    }
    for diagnostic in &report.diagnostics {
        lines.push(format!(
            "{}[{}] {}",
            diagnostic.severity.as_str(),
            diagnostic.kind.code(),
            diagnostic.message
        ));
    }
    lines.join("\n") + "\n"
}

fn manifest_lines(manifest: &Manifest) -> Vec<String> {
    let asks = &manifest.capabilities;
    let about = &manifest.about;
    let mut lines = vec![
        format!("id:           {}", manifest.id),
        format!("version:      {}", manifest.version),
        format!("description:  {}", manifest.description),
    ];
    let requires: Vec<String> = manifest
        .dependencies
        .requires
        .iter()
        .map(ToString::to_string)
        .collect();
    let optional = [
        ("author:      ", about.author.clone()),
        ("license:     ", about.license.clone()),
        ("homepage:    ", about.homepage.clone()),
        ("repository:  ", about.repository.clone()),
        ("keywords:    ", Some(about.keywords.join(", "))),
        ("requires:    ", Some(requires.join(", "))),
        (
            "conflicts:   ",
            Some(manifest.dependencies.conflicts.join(", ")),
        ),
    ];
    for (label, value) in optional {
        if let Some(value) = value.filter(|value| !value.is_empty()) {
            lines.push(format!("{label} {value}"));
        }
    }
    lines.extend([
        "capabilities:".to_string(),
        format!("  http:       {}", asks.http),
        format!("  files:      {}", asks.files),
        format!(
            "  memory:     {}",
            asks.memory_mib
                .map_or("the policy's limit".to_string(), |mib| format!("{mib} MiB"))
        ),
        format!(
            "  timeout:    {}",
            asks.timeout_ms
                .map_or("the policy's default".to_string(), |ms| format!("{ms} ms"))
        ),
    ]);
    lines
}
