//! Time series of a run: with [`NetConfig::sample_every`](super::NetConfig::sample_every) set,
//! the core takes a [`Sample`] every interval of simulated time (an `Ev::Sample` event that
//! reschedules itself while other events are pending) and a last one when the run ends.
//!
//! A sample holds instantaneous values at its time (queues, aggregators in use) and counts
//! over the interval it closes (contributions, delivered bytes, the peak queue). With
//! [`NetConfig::max_samples`](super::NetConfig::max_samples) the series stays bounded: when
//! it is full, pairs of samples merge into one sample of twice the interval, which is exactly
//! the sample a run at twice the interval would have taken (instantaneous values of the
//! later sample, counts added, peaks maxed).

use super::{App, Net, Time, PS_PER_S};

/// Switch egress channels whose queue each sample records individually: the longest at the
/// sample's time.
pub const TOP_QUEUES: usize = 4;

/// A strategy's switch state, read at every sample ([`App::gauges`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Gauges {
    /// Aggregators (one segment slot each) holding a partial sum now.
    pub aggregators_in_use: u64,
    /// Contributions added into aggregators by now (cumulative, every pass counted at the
    /// time it happens, e.g. on the recirculation path; never decreasing).
    pub contributions: u64,
}

/// One point of the time series.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sample {
    /// Time of the sample.
    pub t: Time,
    /// Length of the interval this sample closes (`t` minus the previous sample's `t`, or
    /// `t` for the first). Every sample's but the last is the run's sampling interval.
    pub interval: Time,
    /// Bytes queued at the longest switch egress queue at `t` (all priorities).
    pub queue_max_bytes: u64,
    /// Bytes queued at all switch egress queues together at `t`.
    pub queue_sum_bytes: u64,
    /// Largest queue of any switch egress channel at any time in the interval (including
    /// the queues standing at its start): catches bursts between samples.
    pub queue_peak_bytes: u64,
    /// The longest non-empty switch egress queues at `t`, longest first, at most
    /// [`TOP_QUEUES`]: `(channel, bytes)`, channels indexed as [`Net::channels`].
    pub top_queues: Vec<(u32, u64)>,
    /// [`Gauges::aggregators_in_use`] at `t`.
    pub aggregators_in_use: u64,
    /// Contributions added during the interval (differences of [`Gauges::contributions`]).
    pub contributions: u64,
    /// Wire bytes that reached their destination host during the interval.
    pub delivered_bytes: u64,
}

impl Sample {
    fn seconds(&self) -> f64 {
        self.interval as f64 / PS_PER_S as f64
    }

    /// Aggregation throughput over the interval, contributions per second.
    pub fn contributions_per_s(&self) -> f64 {
        if self.interval == 0 {
            return 0.0;
        }
        self.contributions as f64 / self.seconds()
    }

    /// Delivered goodput over the interval, bit/s of wire bytes reaching hosts.
    pub fn delivered_bps(&self) -> f64 {
        if self.interval == 0 {
            return 0.0;
        }
        self.delivered_bytes as f64 * 8.0 / self.seconds()
    }

    /// `self` followed by `next` as one sample of both intervals.
    fn merge(&self, next: &Sample) -> Sample {
        Sample {
            t: next.t,
            interval: self.interval + next.interval,
            queue_max_bytes: next.queue_max_bytes,
            queue_sum_bytes: next.queue_sum_bytes,
            queue_peak_bytes: self.queue_peak_bytes.max(next.queue_peak_bytes),
            top_queues: next.top_queues.clone(),
            aggregators_in_use: next.aggregators_in_use,
            contributions: self.contributions + next.contributions,
            delivered_bytes: self.delivered_bytes + next.delivered_bytes,
        }
    }
}

/// Sampling state of a [`Net`].
#[derive(Debug)]
pub(super) struct Sampler {
    /// Current interval.
    pub(super) every: Time,
    /// Even, at least 2; `None` = fixed interval.
    limit: Option<usize>,
    last_t: Time,
    last_contributions: u64,
    last_delivered: u64,
    /// Wire bytes delivered to hosts so far.
    pub(super) delivered_bytes: u64,
    /// Largest queue since the last sample.
    pub(super) queue_peak: u64,
    series: Vec<Sample>,
}

impl Sampler {
    pub(super) fn new(every: Time, limit: Option<usize>) -> Sampler {
        assert!(every > 0, "sampling interval must be positive");
        Sampler {
            every,
            limit: limit.map(|l| l.max(2) & !1),
            last_t: 0,
            last_contributions: 0,
            last_delivered: 0,
            delivered_bytes: 0,
            queue_peak: 0,
            series: Vec::new(),
        }
    }
}

impl Net {
    /// The samples taken so far (empty without [`NetConfig::sample_every`](super::NetConfig)).
    pub fn series(&self) -> &[Sample] {
        self.sampler.as_ref().map_or(&[], |s| &s.series)
    }

    /// The sampling interval of [`Net::series`] (the configured one, doubled by every merge).
    pub fn sample_interval(&self) -> Option<Time> {
        self.sampler.as_ref().map(|s| s.every)
    }

    /// Queue state of the switch egress channels now: (max, sum, top queues).
    fn queue_state(&self) -> (u64, u64, Vec<(u32, u64)>) {
        let (mut max, mut sum) = (0, 0);
        let mut top: Vec<(u32, u64)> = Vec::with_capacity(TOP_QUEUES + 1);
        for (i, c) in self.channels.iter().enumerate() {
            if !self.topo.is_switch(c.from) || c.queued_bytes == 0 {
                continue;
            }
            let q = c.queued_bytes;
            max = max.max(q);
            sum += q;
            if top.len() < TOP_QUEUES || q > top[TOP_QUEUES - 1].1 {
                let at = top.partition_point(|&(_, b)| b >= q);
                top.insert(at, (i as u32, q));
                top.truncate(TOP_QUEUES);
            }
        }
        (max, sum, top)
    }

    fn new_sample<A: App>(&mut self, app: &A) -> Sample {
        let (queue_max_bytes, queue_sum_bytes, top_queues) = self.queue_state();
        let now = self.now;
        let g = app.gauges(now);
        let s = self.sampler.as_mut().expect("sampling");
        let sample = Sample {
            t: now,
            interval: now - s.last_t,
            queue_max_bytes,
            queue_sum_bytes,
            queue_peak_bytes: s.queue_peak.max(queue_max_bytes),
            top_queues,
            aggregators_in_use: g.aggregators_in_use,
            contributions: g.contributions - s.last_contributions,
            delivered_bytes: s.delivered_bytes - s.last_delivered,
        };
        s.last_t = now;
        s.last_contributions = g.contributions;
        s.last_delivered = s.delivered_bytes;
        // The next interval starts with the queues standing now.
        s.queue_peak = queue_max_bytes;
        sample
    }

    /// Takes the sample due now; returns when the next one is due.
    pub(super) fn take_sample<A: App>(&mut self, app: &A) -> Time {
        let sample = self.new_sample(app);
        let s = self.sampler.as_mut().expect("sampling");
        s.series.push(sample);
        if s.limit.is_some_and(|l| s.series.len() >= l) {
            let n = s.series.len() / 2;
            for i in 0..n {
                s.series[i] = s.series[2 * i].merge(&s.series[2 * i + 1]);
            }
            s.series.truncate(n);
            s.every *= 2;
        }
        s.last_t + s.every
    }

    /// The run is over: a last sample at its end (later than every sample taken in the run,
    /// which were all taken while events were pending).
    pub(super) fn finish_series<A: App>(&mut self, app: &A) {
        let Some(s) = &self.sampler else { return };
        if self.now == 0 {
            return; // nothing was sent: every frame takes time
        }
        debug_assert!(self.now > s.last_t);
        let sample = self.new_sample(app);
        self.sampler.as_mut().unwrap().series.push(sample);
    }
}
