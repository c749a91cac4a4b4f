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
}
