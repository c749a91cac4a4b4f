//! `p4/v1model/recovery.p4`: the switch's side of loss recovery (docs/host.md, "Loss
//! recovery"): per worker, the number the worker's next Data frame should carry and the last
//! gap found, so a lost Data frame is named to its sender at once (a NACK) and costs one
//! retransmission, not a pull per aggregate it fed.
//!
//! A Data frame a daemon sends carries `SEQ_VALID | n` in `dst_id`
//! ([`sgnn_wire::recovery`]): `n` counts the worker's Data frames, first transmissions and
//! retransmissions alike, mod 2^16. On such a frame from the port of the worker it names, at
//! its first pass, before `agg_table`:
//!
//! - `n` is the expected number: the number after it is expected next;
//! - `n` is ahead by `d` with `0 < d < SEQ_WINDOW`: frames `next..=n` are missing (those the
//!   network lost and this one, which is not processed): the frame becomes a NACK to its
//!   worker, the gap count goes up by one and `n + 1` is expected next;
//! - otherwise the frame is late (reordered, or a duplicate): processed as usual.
//!
//! A tail probe (an Ack with `dst_id` [`sgnn_wire::recovery::SEQ_PROBE`] and in `src_id` the
//! number the worker's next frame will take) is answered the same way: a NACK of the frames
//! the switch has not seen before that number, or, if none is missing, a NACK frame that only
//! repeats the last gap.
//!
//! The NACK frame: an Ack with RESEND set, from the switch to the worker; `src_id` the
//! gap just found, or the last one (`lo << 16 | hi`), `dst_id` the gap before it, `count` the
//! number of gaps found in this worker's frames so far (mod 2^16), `segment` the number the
//! switch expects next. Two ranges per NACK let a worker recover from a lost NACK with the next
//! one; the count tells it when two in a row were lost.
//!
//! **All sent.** A tail probe carries in `count` the NACKs its worker has received. It is
//! *clean* ([`probe_clean`]) when it finds nothing missing (the switch already expects the
//! number it carries) and the worker knows every NACK the switch sent it: then every Data
//! frame the worker sent arrived, or was NACKed and resent under a later number. A
//! daemon probes once it has nothing left to send in the block (at the block's start when
//! it sends nothing in it). The first clean probe of each worker for the current round and
//! block is counted ([`SENT_DONE`], [`SENT_COUNT`], [`sent_step`]); the one that counts the
//! last worker is not answered to its worker alone but becomes the
//! all-sent notice, multicast to every worker through the advance group
//! ([`crate::block_sync::ADVANCE_GROUP`]): an Ack with `dst_id`
//! [`sgnn_wire::recovery::SEND_DONE`], the round and block, `worker_id` the replica's worker.
//! A receiver holding it knows every contribution of the block reached the switch, so a
//! Result it still misses was lost on the way down and is pulled at once. One notice per
//! worker per block, where each worker used to tell each worker it feeds (W^2 frames).

use crate::block_sync::tag;
use crate::config::MAX_WORKERS;
use crate::Register;

/// `seq_next`: per worker, `gaps << 16 | next`: the NACKs sent to it so far (mod 2^16) and the
/// number its next Data frame should carry.
pub const SEQ_NEXT: Register = Register {
    name: "seq_next",
    id: 52,
    bits: 32,
    size: MAX_WORKERS,
};

/// `seq_gap`: per worker, the range of the last NACK sent to it, `lo << 16 | hi`.
pub const SEQ_GAP: Register = Register {
    name: "seq_gap",
    id: 53,
    bits: 32,
    size: MAX_WORKERS,
};

/// `sent_done`: per worker, the mark ([`sent_mark`]) of the round and block whose clean tail
/// probe from it was counted.
pub const SENT_DONE: Register = Register {
    name: "sent_done",
    id: 54,
    bits: 32,
    size: MAX_WORKERS,
};

/// `sent_count`: `key << 16 | left`: the workers whose clean probe has not been counted yet
/// in the block whose key ([`sent_key`]) is `key`. It counts down, so that a Tofino's
/// stateful ALU can tell the last one from its own output (`left` reaching 0) without a third
/// comparison.
pub const SENT_COUNT: Register = Register {
    name: "sent_count",
    id: 55,
    bits: 32,
    size: 1,
};

/// What a `sent_done` cell holds once worker's clean probe of `round`, `block` counted:
/// `!(round << 16 | block)`, so the cells' initial 0 is no block's mark (round and block
/// 65535 both would be: a run never gets there).
pub const fn sent_mark(round: u16, block: u16) -> u32 {
    !tag(round, block)
}

/// The key `sent_count` keeps its count under: the block, with the round's low bit in bit
/// 15, so that it differs from the key of the block before (within a round the block differs;
/// from a round's last block to the next round's block 0 the round's bit does, unless the
/// round has exactly 32,769 blocks). A count left by a block whose notice never went (its
/// last probe came after the block advanced) does not carry over.
pub const fn sent_key(round: u16, block: u16) -> u16 {
    block ^ ((round & 1) << 15)
}

/// What a clean tail probe of the current block does to the count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SentOutcome {
    /// The worker's clean probe was counted already: answered as any probe.
    Again,
    /// Counted; workers are still missing: answered as any probe.
    Counted,
    /// Counted, and every worker's is now: the probe becomes the all-sent notice.
    AllSent,
}

/// One access to `sent_done[w]` and `sent_count` for a clean tail probe of `round`, `block`
/// (the switch's current block) on a switch configured for `workers` workers: the cells' new
/// values and the outcome. The P4 programs and the software switch compute exactly this.
pub fn sent_step(
    done: u32,
    count: u32,
    round: u16,
    block: u16,
    workers: u16,
) -> (u32, u32, SentOutcome) {
    let mark = sent_mark(round, block);
    if done == mark {
        return (done, count, SentOutcome::Again);
    }
    let key = sent_key(round, block);
    // The block's first count starts from `workers`: a cell of another key, or of this key
    // with none left (the cells' initial 0 is key 0 with none left).
    let held = count as u16;
    let left = if (count >> 16) as u16 == key && held != 0 {
        held - 1
    } else {
        workers.wrapping_sub(1)
    };
    let outcome = if left == 0 {
        SentOutcome::AllSent
    } else {
        SentOutcome::Counted
    };
    (mark, (u32::from(key) << 16) | u32::from(left), outcome)
}

/// Whether a tail probe carrying `n` (the number the worker's next frame takes) and
/// `gaps_known` (the NACKs the worker has received, its `count` field) is clean, given what
/// [`seq_step`] made of it: no new gap, the switch expects `n`, and the worker knows every
/// NACK the switch sent it. Without the last, a probe after a lost NACK would count although
/// the frames that NACK named are not resent yet.
pub fn probe_clean(n: u16, gaps_known: u16, outcome: SeqOutcome) -> bool {
    matches!(outcome, SeqOutcome::Nack(k) if !k.new_gap && k.next == n && k.gaps == gaps_known)
}

/// What a seq check or a tail probe found, and the NACK frame's fields if it answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeqOutcome {
    /// The expected number, or a late one: the frame goes on.
    InOrder,
    /// A gap (or a tail probe's answer): the frame becomes this NACK.
    Nack(Nack),
}

/// The fields of a NACK frame (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Nack {
    /// The gap just found, or the last one: `lo << 16 | hi`.
    pub range: u32,
    /// The gap before it.
    pub prev: u32,
    /// Gaps found so far in this worker's frames (mod 2^16).
    pub gaps: u16,
    /// The number the switch expects next.
    pub next: u16,
    /// Whether this frame reports a new gap (counted `nacked`).
    pub new_gap: bool,
}

/// One access to `seq_next[w]` and `seq_gap[w]` for a Data frame carrying number `n`
/// (`probe`: false) or a tail probe whose worker will number its next frame `n` (`probe`:
/// true): the registers' new values and what the frame becomes. The P4 program and the
/// software switch both compute exactly this.
pub fn seq_step(seq_next: u32, seq_gap: u32, n: u16, probe: bool) -> (u32, u32, SeqOutcome) {
    use sgnn_wire::recovery::{pack_range, SEQ_WINDOW};
    let (gaps, next) = ((seq_next >> 16) as u16, seq_next as u16);
    // A probe says every number before `n` was sent; a Data frame that it is `n` itself.
    let last = if probe { n.wrapping_sub(1) } else { n };
    let d = last.wrapping_sub(next);
    let ahead = if probe {
        // Nothing missing when the switch already expects `n` (or is ahead of it).
        d < SEQ_WINDOW && n != next
    } else {
        d != 0 && d < SEQ_WINDOW
    };
    if ahead {
        let gaps = gaps.wrapping_add(1);
        let next = last.wrapping_add(1);
        let range = pack_range(seq_next as u16, last);
        let nack = Nack {
            range,
            prev: seq_gap,
            gaps,
            next,
            new_gap: true,
        };
        return (
            ((gaps as u32) << 16) | next as u32,
            range,
            SeqOutcome::Nack(nack),
        );
    }
    if probe {
        let nack = Nack {
            range: seq_gap,
            prev: seq_gap,
            gaps,
            next,
            new_gap: false,
        };
        return (seq_next, seq_gap, SeqOutcome::Nack(nack));
    }
    let next = if d == 0 { n.wrapping_add(1) } else { next };
    (
        ((gaps as u32) << 16) | next as u32,
        seq_gap,
        SeqOutcome::InOrder,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use sgnn_wire::recovery::pack_range;

    #[test]
    fn in_order_late_gap_and_probe() {
        // In order.
        let (n, g, o) = seq_step(0, 0, 0, false);
        assert_eq!((n, g, o), (1, 0, SeqOutcome::InOrder));
        // A gap: 1 and 2 lost, 3 arrives.
        let (n, g, o) = seq_step(n, g, 3, false);
        assert_eq!(n, (1 << 16) | 4);
        assert_eq!(g, pack_range(1, 3));
        assert_eq!(
            o,
            SeqOutcome::Nack(Nack {
                range: pack_range(1, 3),
                prev: 0,
                gaps: 1,
                next: 4,
                new_gap: true
            })
        );
        // Late: 2 arrives after all, nothing changes.
        assert_eq!(seq_step(n, g, 2, false), (n, g, SeqOutcome::InOrder));
        // Probe at 4: nothing missing, the last gap repeated.
        let (n2, g2, o) = seq_step(n, g, 4, true);
        assert_eq!((n2, g2), (n, g));
        assert!(matches!(o, SeqOutcome::Nack(k) if !k.new_gap && k.range == g && k.next == 4));
        // Probe at 7: 4, 5, 6 never came.
        let (n3, g3, o) = seq_step(n, g, 7, true);
        assert_eq!(n3, (2 << 16) | 7);
        assert_eq!(g3, pack_range(4, 6));
        assert!(matches!(o, SeqOutcome::Nack(k) if k.new_gap && k.prev == g && k.gaps == 2));
        // Wrap-around.
        let (n, _, o) = seq_step(0xffff, 0, 0xffff, false);
        assert_eq!((n as u16, o), (0, SeqOutcome::InOrder));
        let (n, _, o) = seq_step(0xfffe, 0, 1, false);
        assert_eq!(n as u16, 2);
        assert!(matches!(o, SeqOutcome::Nack(k) if k.range == pack_range(0xfffe, 1)));
    }

    #[test]
    fn clean_probes_count_once_per_worker_and_the_last_is_all_sent() {
        // Probes: clean only with no new gap and the switch expecting the probe's number.
        let (_, _, o) = seq_step(5, 0, 5, true);
        assert!(probe_clean(5, 0, o));
        let (_, _, o) = seq_step(5, 0, 7, true);
        assert!(!probe_clean(7, 0, o), "5 and 6 missing");
        let (_, _, o) = seq_step(9, 0, 7, true);
        assert!(
            !probe_clean(7, 0, o),
            "a stale probe: the worker sent more since"
        );
        // The switch NACKed a gap the worker never heard of (the NACK was lost).
        let (_, _, o) = seq_step((1 << 16) | 5, 0, 5, true);
        assert!(!probe_clean(5, 0, o));
        assert!(probe_clean(5, 1, o));
        // Three workers in round 2, block 4; the cells start at 0.
        let (mut done, mut count) = ([0u32; 3], 0u32);
        let mut step = |w: usize, count: &mut u32| {
            let (d, c, o) = sent_step(done[w], *count, 2, 4, 3);
            done[w] = d;
            *count = c;
            o
        };
        assert_eq!(step(0, &mut count), SentOutcome::Counted);
        assert_eq!(step(0, &mut count), SentOutcome::Again);
        assert_eq!(step(2, &mut count), SentOutcome::Counted);
        assert_eq!(step(1, &mut count), SentOutcome::AllSent);
        assert_eq!(count, u32::from(sent_key(2, 4)) << 16);
        // The next block starts afresh whatever the last one left; so does the next round's
        // block 0 after a round of one block.
        let (_, c, o) = sent_step(done[0], (u32::from(sent_key(2, 4)) << 16) | 1, 2, 5, 3);
        assert_eq!((c & 0xffff, o), (2, SentOutcome::Counted));
        assert_ne!(sent_key(2, 0), sent_key(3, 0));
        assert_ne!(
            sent_mark(0, 0),
            0,
            "the cells' initial value is no block's mark"
        );
        // One worker: its clean probe is the notice at once.
        assert_eq!(sent_step(0, 0, 0, 0, 1).2, SentOutcome::AllSent);
    }
}
