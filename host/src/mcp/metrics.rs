//! `serve --metrics ADDR`: the runtime's statistics ([`crate::output::stats`]) in Prometheus'
//! text format (version 0.0.4) at [`METRICS_ENDPOINT`], read afresh at every scrape and
//! encoded by the `prometheus-client` crate.
//!
//! | metric | type | labels |
//! |---|---|---|
//! | `toolcell_calls_total` | counter | `tool`, `plugin`, `outcome` (every label of [`OUTCOMES`]) |
//! | `toolcell_call_duration_seconds` | histogram ([`LATENCY_BUCKETS`]) | `tool`, `plugin` |
//! | `toolcell_fuel_used_total` | counter | `tool`, `plugin` |
//! | `toolcell_plugin_peak_memory_bytes` | gauge | `plugin` |
//!
//! A plugin's first [`MAX_TOOL_SERIES`] tools (in the order they were registered) have
//! series of their own; its other tools are counted together under the `tool` label
//! [`OTHER_TOOLS`], so that a plugin of a thousand tools cannot make a scrape of
//! megabytes and tens of thousands of series.
//!
//! [`OUTCOMES`]: crate::output::stats::OUTCOMES
//! [`LATENCY_BUCKETS`]: crate::output::stats::LATENCY_BUCKETS

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::prometheus_text::{self, CONTENT_TYPE as TEXT_FORMAT};
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;

use super::connections::{ConnectionLimits, Listener};
use crate::Runtime;
use crate::output::stats::{Stats, ToolStats};

/// Where the metrics are served.
pub const METRICS_ENDPOINT: &str = "/metrics";

/// How many of one plugin's tools have series of their own.
pub const MAX_TOOL_SERIES: usize = 100;

/// The `tool` label under which a plugin's tools beyond [`MAX_TOOL_SERIES`] are counted
/// together (no tool name contains `*`).
pub const OTHER_TOOLS: &str = "*other*";

/// Serves the metrics of `runtime` on `listener` for as long as the task runs, its
/// connections within `limits`.
pub async fn serve_metrics(
    listener: TcpListener,
    runtime: Arc<RwLock<Runtime>>,
    limits: ConnectionLimits,
) {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(RuntimeStats(runtime)));
    let registry = Arc::new(registry);
    let mut listener = Listener::new(listener, "metrics", limits);
    loop {
        let (stream, connection) = listener.accept().await;
        let registry = registry.clone();
        let service = connection.service(move |request: Request<Incoming>| {
            let response = respond(&request, &registry);
            async move { response }
        });
        let serving = auto::Builder::new(TokioExecutor::new())
            .serve_connection(TokioIo::new(stream), service)
            .into_owned();
        tokio::spawn(connection.serve(serving));
    }
}

/// `GET /metrics`: the text format; anything else: 404 or 405.
fn respond(request: &Request<Incoming>, registry: &Registry) -> Response<Full<Bytes>> {
    let reply = |status: StatusCode, content_type: &'static str, body: String| {
        let mut response = Response::new(Full::new(Bytes::from(body)));
        *response.status_mut() = status;
        response
            .headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
        response
    };
    let plain = "text/plain; charset=utf-8";
    if request.uri().path() != METRICS_ENDPOINT {
        return reply(StatusCode::NOT_FOUND, plain, "not found\n".to_string());
    }
    if request.method() != Method::GET && request.method() != Method::HEAD {
        return reply(
            StatusCode::METHOD_NOT_ALLOWED,
            plain,
            "only GET\n".to_string(),
        );
    }
    let mut text = String::new();
    match prometheus_text::encode(&mut text, registry) {
        Ok(()) => reply(StatusCode::OK, TEXT_FORMAT, text),
        Err(_) => reply(
            StatusCode::INTERNAL_SERVER_ERROR,
            plain,
            "cannot encode the metrics\n".to_string(),
        ),
    }
}

/// The collector that reads [`Runtime::stats`] at each scrape.
struct RuntimeStats(Arc<RwLock<Runtime>>);

impl std::fmt::Debug for RuntimeStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RuntimeStats")
    }
}

impl Collector for RuntimeStats {
    fn encode(&self, encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let mut stats = self
            .0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .stats();
        stats.tools = bounded(std::mem::take(&mut stats.tools));
        encode(&stats, encoder)
    }
}

/// `tools` with each plugin's tools beyond its first [`MAX_TOOL_SERIES`] added up into
/// one entry named [`OTHER_TOOLS`], placed where the first of them was.
fn bounded(tools: Vec<ToolStats>) -> Vec<ToolStats> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut other: HashMap<String, usize> = HashMap::new();
    let mut kept: Vec<ToolStats> = Vec::with_capacity(tools.len());
    for tool in tools {
        let count = seen.entry(tool.plugin.clone()).or_default();
        *count += 1;
        if *count <= MAX_TOOL_SERIES {
            kept.push(tool);
            continue;
        }
        match other.get(&tool.plugin) {
            Some(&index) => add(&mut kept[index], &tool),
            None => {
                other.insert(tool.plugin.clone(), kept.len());
                kept.push(ToolStats {
                    tool: OTHER_TOOLS.to_string(),
                    ..tool
                });
            }
        }
    }
    kept
}

/// Adds `tool`'s counts to `into`'s (the same outcomes and buckets, in the same order).
fn add(into: &mut ToolStats, tool: &ToolStats) {
    for ((_, total), (_, count)) in into.calls.iter_mut().zip(&tool.calls) {
        *total += count;
    }
    for ((_, total), (_, count)) in into.latency.buckets.iter_mut().zip(&tool.latency.buckets) {
        *total += count;
    }
    into.latency.count += tool.latency.count;
    into.latency.sum += tool.latency.sum;
    into.fuel_used += tool.fuel_used;
}

/// Writes `stats` as the metrics of the table above.
fn encode(stats: &Stats, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
    let mut calls = encoder.encode_descriptor(
        "toolcell_calls",
        "Tool calls, by how they ended",
        None,
        MetricType::Counter,
    )?;
    for tool in &stats.tools {
        for (outcome, count) in &tool.calls {
            let labels = [
                ("tool", tool.tool.as_str()),
                ("plugin", tool.plugin.as_str()),
                ("outcome", outcome),
            ];
            ConstCounter::new(*count).encode(calls.encode_family(&labels)?)?;
        }
    }
    let mut durations = encoder.encode_descriptor(
        "toolcell_call_duration_seconds",
        "How long calls ran in their plugin, from their start there to their outcome",
        None,
        MetricType::Histogram,
    )?;
    for tool in &stats.tools {
        let labels = [
            ("tool", tool.tool.as_str()),
            ("plugin", tool.plugin.as_str()),
        ];
        // The encoder takes each bucket's own count and adds them up itself.
        let mut below = 0;
        let buckets: Vec<(f64, u64)> = tool
            .latency
            .buckets
            .iter()
            .map(|&(bound, cumulative)| {
                let own = cumulative - below;
                below = cumulative;
                (bound, own)
            })
            .collect();
        durations
            .encode_family(&labels)?
            .encode_histogram::<NoLabelSet>(
                tool.latency.sum.as_secs_f64(),
                tool.latency.count,
                &buckets,
                None,
            )?;
    }
    let mut fuel = encoder.encode_descriptor(
        "toolcell_fuel_used",
        "Fuel (wasm instructions, roughly) the tool's calls burnt",
        None,
        MetricType::Counter,
    )?;
    for tool in &stats.tools {
        let labels = [
            ("tool", tool.tool.as_str()),
            ("plugin", tool.plugin.as_str()),
        ];
        ConstCounter::new(tool.fuel_used).encode(fuel.encode_family(&labels)?)?;
    }
    let mut memory = encoder.encode_descriptor(
        "toolcell_plugin_peak_memory_bytes",
        "The most linear memory an instance of the plugin has had",
        None,
        MetricType::Gauge,
    )?;
    for plugin in &stats.plugins {
        let labels = [("plugin", plugin.plugin.as_str())];
        let bytes = i64::try_from(plugin.peak_memory).unwrap_or(i64::MAX);
        ConstGauge::new(bytes).encode(memory.encode_family(&labels)?)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::output::stats::Histogram;

    fn tool(plugin: &str, n: usize) -> ToolStats {
        ToolStats {
            tool: format!("t{n}"),
            plugin: plugin.to_string(),
            calls: vec![("completed", 2), ("failed", 1)],
            latency: Histogram {
                buckets: vec![(0.1, 1), (f64::INFINITY, 3)],
                count: 3,
                sum: Duration::from_millis(300),
            },
            fuel_used: 10,
        }
    }

    #[test]
    fn a_plugins_tools_beyond_the_bound_are_counted_together() {
        // Issue 33: a plugin of 1000 tools made 30000 series and a 4 MB scrape.
        let tools: Vec<ToolStats> = (0..1000)
            .map(|n| tool("many", n))
            .chain((0..3).map(|n| tool("few", n)))
            .collect();
        let bounded = bounded(tools);
        assert_eq!(bounded.len(), MAX_TOOL_SERIES + 1 + 3);
        let other = &bounded[MAX_TOOL_SERIES];
        assert_eq!(
            (other.tool.as_str(), other.plugin.as_str()),
            (OTHER_TOOLS, "many")
        );
        let rest = (1000 - MAX_TOOL_SERIES) as u64;
        assert_eq!(other.calls, vec![("completed", 2 * rest), ("failed", rest)]);
        assert_eq!(
            other.latency.buckets,
            vec![(0.1, rest), (f64::INFINITY, 3 * rest)]
        );
        assert_eq!(other.latency.count, 3 * rest);
        assert_eq!(other.latency.sum, Duration::from_millis(300) * rest as u32);
        assert_eq!(other.fuel_used, 10 * rest);
        assert_eq!(
            bounded[MAX_TOOL_SERIES - 1].tool,
            format!("t{}", MAX_TOOL_SERIES - 1)
        );
        assert!(bounded.iter().filter(|tool| tool.plugin == "few").count() == 3);
    }
}
