//! The REST door: C clients on kept-alive connections post payments with Idempotency-Keys to
//! the running service, each to a fresh pre-created order (so requests never contend for a row
//! and each is the same transaction as the ceiling's). A closed loop finds the maximum rate; an
//! open loop at half of it measures latency when the service is not saturated, from each
//! request's intended start (so a stall is not hidden by the client waiting for it).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::Serialize;
use sqlx::Connection;

use crate::Bench;
use crate::client::Http;
use crate::cpu::{CpuMeter, CpuSplit};
use crate::scratch::Db;
use crate::service::{Overrides, Service, Spec};
use crate::stats::{Latency, latency_histogram, rate, record};
use crate::workload::{self, Payment};

/// A running service to send requests to, on a database and topology of its own.
pub struct Target {
    pub service: Service,
    db: Db,
    topology: order_service::amqp::Topology,
}

impl Target {
    pub async fn start(bench: &Bench, label: &str) -> anyhow::Result<Self> {
        let scratch = &bench.scratch;
        let (amqp, topology) = scratch.topology(label).await?;
        let db = scratch.database(label);
        let plan = &bench.plan;
        let env: Vec<_> = plan
            .service_env
            .iter()
            .chain(&plan.rest_service_env)
            .cloned()
            .collect();
        let (service, _) = Service::start(Spec {
            bin: &bench.service_bin,
            db: &db,
            amqp: &amqp,
            amqp_url: &scratch.amqp_url,
            overrides: Overrides::default(),
            env: &env,
            log: scratch.log_dir.join(format!("{label}.log")),
        })
        .await?;
        Ok(Self {
            service,
            db,
            topology,
        })
    }

    /// `n` pending orders, each with the payment that will complete it.
    pub async fn seed(&self, n: usize) -> anyhow::Result<Vec<Payment>> {
        let orders = workload::new_orders(n);
        let mut conn = self.db.connect().await?;
        workload::seed_orders(&mut conn, &orders).await?;
        conn.close().await?;
        Ok(orders.into_iter().map(Payment::for_order).collect())
    }

    pub async fn stop(self, bench: &Bench) -> anyhow::Result<()> {
        self.service.stop().await?;
        bench.scratch.drop_database(&self.db).await?;
        bench.scratch.delete_topology(&self.topology).await
    }
}

/// Sends one payment with its own Idempotency-Key; `Ok(replayed)` on 201.
pub async fn pay(http: &Http, payment: &Payment) -> anyhow::Result<bool> {
    pay_with_key(http, payment, &format!("key-{}", payment.transfer_id)).await
}

pub async fn pay_with_key(http: &Http, payment: &Payment, key: &str) -> anyhow::Result<bool> {
    let path = format!("/v1/orders/{}/payments", payment.order_id);
    let answer = http.post(&path, key, payment.body()).await?;
    if answer.status.as_u16() != 201 {
        anyhow::bail!(
            "{} {}",
            answer.status,
            String::from_utf8_lossy(&answer.body)
        );
    }
    Ok(answer.replayed)
}

/// The result of a closed-loop run.
#[derive(Debug, Clone, Serialize)]
pub struct ClosedLoop {
    pub req_per_s: f64,
    pub requests: u64,
    pub errors: u64,
    pub latency: Latency,
    /// Service CPU seconds per 1 000 requests.
    pub cpu_s_per_1000: f64,
    pub cpu: CpuSplit,
}

/// `clients` clients, each sending its next request as soon as the last one answered.
pub async fn closed_loop(
    target: &Target,
    clients: usize,
    duration: Duration,
) -> anyhow::Result<ClosedLoop> {
    let supply = ((duration.as_secs_f64() * 4_000.0) as usize).max(500);
    let payments = Arc::new(target.seed(supply).await?);
    let http = Http::new(target.service.http_port(), clients);
    let next = Arc::new(AtomicUsize::new(0));
    let meter = CpuMeter::start(Some(target.service.pid));
    let cpu_before = target.service.cpu();
    let started = Instant::now();
    let deadline = started + duration;
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..clients {
        let (http, payments, next) = (http.clone(), payments.clone(), next.clone());
        tasks.spawn(async move {
            let mut histogram = latency_histogram();
            let mut errors = 0u64;
            while Instant::now() < deadline {
                let Some(payment) = payments.get(next.fetch_add(1, Ordering::Relaxed)) else {
                    break;
                };
                let sent = Instant::now();
                match pay(&http, payment).await {
                    Ok(_) => record(&mut histogram, sent.elapsed()),
                    Err(e) => {
                        if errors == 0 {
                            eprintln!("warning: a REST payment failed: {e:#}");
                        }
                        errors += 1;
                    }
                }
            }
            (histogram, errors)
        });
    }
    let (histogram, errors) = merge(tasks).await?;
    let elapsed = started.elapsed();
    let cpu = meter.stop();
    let service_cpu = target.service.cpu().saturating_sub(cpu_before);
    let requests = histogram.len() + errors;
    Ok(ClosedLoop {
        req_per_s: rate(histogram.len(), elapsed),
        requests,
        errors,
        latency: Latency::of(&histogram),
        cpu_s_per_1000: service_cpu.as_secs_f64() * 1_000.0 / requests.max(1) as f64,
        cpu,
    })
}

/// The result of an open-loop run.
#[derive(Debug, Clone, Serialize)]
pub struct OpenLoop {
    pub target_per_s: f64,
    pub achieved_per_s: f64,
    pub requests: u64,
    pub errors: u64,
    pub latency: Latency,
}

/// Starts requests on a fixed schedule of `per_second`, whatever the answers; latency counts from
/// each request's scheduled start.
pub async fn open_loop(
    target: &Target,
    per_second: f64,
    duration: Duration,
) -> anyhow::Result<OpenLoop> {
    let per_second = per_second.max(1.0);
    let count = ((per_second * duration.as_secs_f64()) as usize).max(1);
    let payments = target.seed(count).await?;
    let http = Http::new(target.service.http_port(), 256);
    let interval = Duration::from_secs_f64(1.0 / per_second);
    let started = tokio::time::Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for (i, payment) in payments.into_iter().enumerate() {
        let intended = started + interval.mul_f64(i as f64);
        tokio::time::sleep_until(intended).await;
        let http = http.clone();
        tasks.spawn(async move { pay(&http, &payment).await.ok().map(|_| intended.elapsed()) });
    }
    let mut histogram = latency_histogram();
    let mut errors = 0u64;
    while let Some(joined) = tasks.join_next().await {
        match joined? {
            Some(latency) => record(&mut histogram, latency),
            None => errors += 1,
        }
    }
    Ok(OpenLoop {
        target_per_s: per_second,
        achieved_per_s: rate(histogram.len(), started.elapsed()),
        requests: count as u64,
        errors,
        latency: Latency::of(&histogram),
    })
}

async fn merge(
    mut tasks: tokio::task::JoinSet<(Histogram<u64>, u64)>,
) -> anyhow::Result<(Histogram<u64>, u64)> {
    let mut all = latency_histogram();
    let mut errors = 0;
    while let Some(joined) = tasks.join_next().await {
        let (histogram, failed) = joined?;
        all.add(&histogram)?;
        errors += failed;
    }
    Ok((all, errors))
}
