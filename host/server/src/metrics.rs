//! `/metrics` in the Prometheus text format: requests and latencies per
//! route, index sizes, plugin health. Counters live in memory and restart
//! with the process, as Prometheus expects.

use mem_service::Service;
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::time::Duration;

/// Upper bounds (seconds) of the latency histogram buckets.
const BUCKETS: [f64; 12] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0,
];

#[derive(Debug, Default)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    sum: f64,
    count: u64,
}

#[derive(Debug, Default)]
pub struct Metrics {
    /// (method, route, status) → requests.
    requests: Mutex<BTreeMap<(String, String, u16), u64>>,
    /// (method, route) → latency.
    latency: Mutex<BTreeMap<(String, String), Histogram>>,
}

impl Metrics {
    pub fn record(&self, method: &str, route: &str, status: u16, took: Duration) {
        *self
            .requests
            .lock()
            .entry((method.to_string(), route.to_string(), status))
            .or_default() += 1;
        let secs = took.as_secs_f64();
        let mut lat = self.latency.lock();
        let h = lat
            .entry((method.to_string(), route.to_string()))
            .or_default();
        for (i, bound) in BUCKETS.iter().enumerate() {
            if secs <= *bound {
                h.counts[i] += 1;
            }
        }
        h.sum += secs;
        h.count += 1;
    }

    /// The exposition text, with gauges read from the service now.
    pub fn render(&self, svc: &Service) -> String {
        let mut out = String::new();
        out.push_str("# HELP mem_http_requests_total HTTP requests by route and status.\n");
        out.push_str("# TYPE mem_http_requests_total counter\n");
        for ((m, r, s), n) in self.requests.lock().iter() {
            let _ = writeln!(
                out,
                "mem_http_requests_total{{method=\"{m}\",route=\"{}\",status=\"{s}\"}} {n}",
                escape(r)
            );
        }
        out.push_str("# HELP mem_http_request_duration_seconds HTTP request latency.\n");
        out.push_str("# TYPE mem_http_request_duration_seconds histogram\n");
        for ((m, r), h) in self.latency.lock().iter() {
            let labels = format!("method=\"{m}\",route=\"{}\"", escape(r));
            for (i, bound) in BUCKETS.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "mem_http_request_duration_seconds_bucket{{{labels},le=\"{bound}\"}} {}",
                    h.counts[i]
                );
            }
            let _ = writeln!(
                out,
                "mem_http_request_duration_seconds_bucket{{{labels},le=\"+Inf\"}} {}",
                h.count
            );
            let _ = writeln!(
                out,
                "mem_http_request_duration_seconds_sum{{{labels}}} {}",
                h.sum
            );
            let _ = writeln!(
                out,
                "mem_http_request_duration_seconds_count{{{labels}}} {}",
                h.count
            );
        }
        if let Ok(Some(s)) = svc.index_stats() {
            gauge(
                &mut out,
                "mem_index_documents",
                "Documents in the search index.",
                s.documents,
            );
            gauge(
                &mut out,
                "mem_index_vectors",
                "Vectors in the semantic index.",
                s.vectors,
            );
            gauge(
                &mut out,
                "mem_index_lexical_bytes",
                "Size of the lexical index.",
                s.lexical_bytes,
            );
            gauge(
                &mut out,
                "mem_index_vector_bytes",
                "Size of the vector index.",
                s.vector_bytes,
            );
        }
        if let Some(plugins) = svc.plugins()
            && let Ok(list) = plugins.list()
        {
            gauge(
                &mut out,
                "mem_plugins_installed",
                "Installed plugins.",
                list.len() as u64,
            );
            out.push_str("# HELP mem_plugin_calls_total Plugin calls since install.\n");
            out.push_str("# TYPE mem_plugin_calls_total counter\n");
            for p in &list {
                let _ = writeln!(
                    out,
                    "mem_plugin_calls_total{{plugin=\"{}\"}} {}",
                    escape(&p.manifest.name),
                    p.failures.calls
                );
            }
            out.push_str("# HELP mem_plugin_failures_total Failed plugin calls by reason.\n");
            out.push_str("# TYPE mem_plugin_failures_total counter\n");
            for p in &list {
                for (reason, n) in &p.failures.by_reason {
                    let _ = writeln!(
                        out,
                        "mem_plugin_failures_total{{plugin=\"{}\",reason=\"{}\"}} {n}",
                        escape(&p.manifest.name),
                        reason.as_str()
                    );
                }
            }
        }
        out
    }
}

fn gauge(out: &mut String, name: &str, help: &str, v: u64) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {v}");
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_are_cumulative() {
        let m = Metrics::default();
        m.record("GET", "/v1/x", 200, Duration::from_millis(3));
        m.record("GET", "/v1/x", 404, Duration::from_millis(300));
        let h = m.latency.lock();
        let h = &h[&("GET".to_string(), "/v1/x".to_string())];
        assert_eq!(h.count, 2);
        assert_eq!(h.counts[BUCKETS.len() - 1], 2);
        assert_eq!(h.counts[2], 1, "3 ms is within 5 ms");
    }
}
