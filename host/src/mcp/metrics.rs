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
//! [`OUTCOMES`]: crate::output::stats::OUTCOMES
//! [`LATENCY_BUCKETS`]: crate::output::stats::LATENCY_BUCKETS

use std::convert::Infallible;
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

use crate::Runtime;
use crate::output::stats::Stats;

/// Where the metrics are served.
pub const METRICS_ENDPOINT: &str = "/metrics";

/// Serves the metrics of `runtime` on `listener` for as long as the task runs.
pub async fn serve_metrics(listener: TcpListener, runtime: Arc<RwLock<Runtime>>) {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(RuntimeStats(runtime)));
    let registry = Arc::new(registry);
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(error) => {
                tracing::warn!("accepting a metrics connection failed: {error}");
                continue;
            }
        };
        let registry = registry.clone();
        let handler = hyper::service::service_fn(move |request: Request<Incoming>| {
            let response = respond(&request, &registry);
            async move { Ok::<_, Infallible>(response) }
        });
        tokio::spawn(async move {
            let connection = auto::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(stream), handler)
                .await;
            if let Err(error) = connection {
                tracing::debug!("a metrics connection ended with an error: {error}");
            }
        });
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
        let stats = self
            .0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .stats();
        encode(&stats, encoder)
    }
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
