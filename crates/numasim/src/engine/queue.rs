//! The event queue: a binary heap keyed by (time, sequence).
//!
//! Why a plain binary heap (our own `Heap`, in the std `BinaryHeap`'s
//! order): models keep few pending events (one per CPU or device, not one
//! per page), so a heap of a few thousand entries stays in cache and beats
//! fancier calendar queues. The payload is the model's own
//! enum stored inline, so there is no boxing and no dynamic dispatch.
//!
//! Why a sequence number: events at the same nanosecond must pop in the order
//! they were pushed, or a run would depend on the heap's internal layout. The
//! time and the sequence are compared as one `u128` key so that each heap
//! comparison is a single wide integer compare.

use std::fmt;

use super::time::{Dur, Time};

/// Pushing an event before the current time: always a bug in the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PastEvent {
    /// The time the event was scheduled for.
    pub at: Time,
    /// The queue's clock when it was pushed.
    pub now: Time,
}

impl fmt::Display for PastEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "event scheduled at {} but the clock is already at {}",
            self.at, self.now
        )
    }
}

impl std::error::Error for PastEvent {}

/// One heap entry, ordered by `key` only: the heap pops the smallest
/// (earliest, then first-pushed).
#[derive(Clone, Copy)]
struct Entry<E> {
    /// Event time in ns (high half of the key).
    time: u64,
    /// Push sequence number (low half of the key).
    seq: u64,
    event: E,
}

impl<E> Entry<E> {
    /// `time << 64 | seq`: one integer compare orders by time, then FIFO.
    /// Built on the fly rather than stored, because a stored `u128` is
    /// 16-byte aligned and would pad every entry to 32 bytes.
    #[inline(always)]
    fn key(&self) -> u128 {
        ((self.time as u128) << 64) | self.seq as u128
    }
}

/// A binary min-heap of entries by key: the std `BinaryHeap`'s order with
/// the entry being placed held in registers while the sift moves the others,
/// and written once where it lands. Session 19 (`perf annotate`): the std
/// `PeekMut` wrote the replacing entry to the top and its sift read it back
/// at once, a 16-byte load over two 8-byte stores that the store buffer
/// cannot forward (the instruction after that load held 38% of the sift's
/// samples in altix-devzero-faults, where the sift was 21% of the run);
/// the child is chosen by a flag, not a branch (a heap's two children are
/// equally likely the earlier). Keys are unique (the push number), so every
/// correct heap pops the same sequence: the order is the key's, not this
/// layout's.
struct Heap<E> {
    data: Vec<Entry<E>>,
}

impl<E: Copy> Heap<E> {
    fn with_capacity(n: usize) -> Self {
        Heap {
            data: Vec::with_capacity(n),
        }
    }

    #[inline(always)]
    fn len(&self) -> usize {
        self.data.len()
    }

    #[inline(always)]
    fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    #[inline(always)]
    fn peek(&self) -> Option<&Entry<E>> {
        self.data.first()
    }

    /// Add `e`: up from a new leaf.
    #[inline]
    fn push(&mut self, e: Entry<E>) {
        let hole = self.data.len();
        self.data.push(e);
        Self::sift_up(&mut self.data, hole, e);
    }

    /// Place `e` at `hole` or above it, parents moved down into the hole.
    #[inline(always)]
    fn sift_up(data: &mut [Entry<E>], mut hole: usize, e: Entry<E>) {
        let key = e.key();
        while hole > 0 {
            let parent = (hole - 1) / 2;
            if key >= data[parent].key() {
                break;
            }
            data[hole] = data[parent];
            hole = parent;
        }
        data[hole] = e;
    }

    /// Place `e` from the root down (the root's entry is overwritten).
    #[inline]
    fn sift_from_root(data: &mut [Entry<E>], e: Entry<E>) {
        let key = e.key();
        let len = data.len();
        let mut hole = 0;
        let mut child = 1;
        while child + 1 < len {
            // The earlier of the two children, without a branch.
            child += usize::from(data[child + 1].key() < data[child].key());
            if key < data[child].key() {
                data[hole] = e;
                return;
            }
            data[hole] = data[child];
            hole = child;
            child = 2 * hole + 1;
        }
        if child + 1 == len && data[child].key() < key {
            data[hole] = data[child];
            hole = child;
        }
        data[hole] = e;
    }

    /// Replace the earliest entry with `e` and return the one replaced.
    #[inline]
    fn replace_top(&mut self, e: Entry<E>) -> Option<Entry<E>> {
        let old = *self.data.first()?;
        Self::sift_from_root(&mut self.data, e);
        Some(old)
    }

    /// Remove the earliest entry. The last entry is placed as the std heap
    /// places it: down to a leaf along the earlier children, then up (a
    /// last entry is usually a late event, so it belongs near the bottom).
    #[inline]
    fn pop(&mut self) -> Option<Entry<E>> {
        let last = self.data.pop()?;
        let Some(&top) = self.data.first() else {
            return Some(last);
        };
        let data = &mut self.data[..];
        let len = data.len();
        let mut hole = 0;
        let mut child = 1;
        while child + 1 < len {
            child += usize::from(data[child + 1].key() < data[child].key());
            data[hole] = data[child];
            hole = child;
            child = 2 * hole + 1;
        }
        if child + 1 == len {
            data[hole] = data[child];
            hole = child;
        }
        Self::sift_up(data, hole, last);
        Some(top)
    }
}

/// A deterministic future-event list with a monotonic clock.
///
/// `E` is the model's event enum. The clock (`now`) is the time of the last
/// popped event; it never goes backwards. Events with equal times pop in
/// the order they were pushed.
pub struct EventQueue<E> {
    heap: Heap<E>,
    seq: u64,
    now: Time,
}

impl<E: Copy> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Copy> fmt::Debug for EventQueue<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventQueue")
            .field("now", &self.now)
            .field("pending", &self.heap.len())
            .field("next", &self.peek_time())
            .finish()
    }
}

impl<E: Copy> EventQueue<E> {
    /// An empty queue with the clock at zero.
    pub fn new() -> Self {
        Self::with_capacity(0)
    }

    /// An empty queue with room for `n` pending events before reallocating.
    pub fn with_capacity(n: usize) -> Self {
        EventQueue {
            heap: Heap::with_capacity(n),
            seq: 0,
            now: Time::ZERO,
        }
    }

    /// The current simulated time: the time of the last popped event.
    #[inline]
    pub fn now(&self) -> Time {
        self.now
    }

    /// Schedule `event` at `at`.
    ///
    /// `at` may equal `now()` (the event then pops after every event already
    /// pending at that time). An `at` before `now()` is refused with
    /// [`PastEvent`] and the queue is left unchanged: we report rather than
    /// clamp, because a clamped event silently changes the model's timing.
    #[inline]
    pub fn push(&mut self, at: Time, event: E) -> Result<(), PastEvent> {
        if at < self.now {
            return Err(PastEvent { at, now: self.now });
        }
        self.insert(at, event);
        Ok(())
    }

    /// Queue an entry with the next sequence number (the FIFO tie-break).
    #[inline(always)]
    fn insert(&mut self, at: Time, event: E) {
        let seq = self.seq;
        // 2^64 pushes would take centuries; wrapping would break FIFO order.
        self.seq += 1;
        self.heap.push(Entry {
            time: at.0,
            seq,
            event,
        });
    }

    /// Schedule `event` `delay` after `now()`; cannot be in the past.
    /// Returns the time it was scheduled for.
    #[inline]
    pub fn push_after(&mut self, delay: Dur, event: E) -> Time {
        let at = self.now + delay;
        self.insert(at, event);
        at
    }

    /// Remove the earliest event (first-pushed among equal times), advance
    /// the clock to its time and return it.
    #[inline]
    pub fn pop(&mut self) -> Option<(Time, E)> {
        let Entry { time, event, .. } = self.heap.pop()?;
        let at = Time(time);
        debug_assert!(at >= self.now, "event queue clock went backwards");
        self.now = at;
        Some((at, event))
    }

    /// Pop the earliest event only if it is due at or before `limit`
    /// (for running a model up to a horizon).
    /// Pop the earliest event and, in the same step, schedule `next` at
    /// `delay` after it: the hold operation of a CPU or device model that
    /// handles one event and arms its next. One sift of the heap instead of
    /// two; same order as `pop` followed by `push_after`.
    #[inline]
    pub fn pop_push_after(&mut self, delay: Dur, next: E) -> Option<(Time, E)> {
        let seq = self.seq;
        let at = Time(self.heap.peek()?.time);
        let new = Entry {
            time: (at + delay).0,
            seq,
            event: next,
        };
        let old = self.heap.replace_top(new)?;
        self.seq += 1;
        debug_assert!(at >= self.now, "event queue clock went backwards");
        self.now = at;
        Some((at, old.event))
    }

    /// The earliest event, left at the top of the queue while the caller
    /// handles it (the clock moves to its time). Finish with
    /// [`replace_top`](Self::replace_top) (the handler's own next event:
    /// one sift of the heap, where `pop` and `push` take two) or
    /// [`discard_top`](Self::discard_top); events pushed meanwhile are
    /// never earlier than it, so it stays on top, and every event keeps the
    /// sequence number a `pop` then `push` would give it (same order).
    #[inline]
    pub fn peek_pending(&mut self) -> Option<(Time, E)> {
        let top = self.heap.peek()?;
        let at = Time(top.time);
        debug_assert!(at >= self.now, "event queue clock went backwards");
        self.now = at;
        Some((at, top.event))
    }

    /// Replace the event [`peek_pending`](Self::peek_pending) returned
    /// with `event` at `at` (not before now).
    #[inline]
    pub fn replace_top(&mut self, at: Time, event: E) -> Result<(), PastEvent> {
        if at < self.now {
            return Err(PastEvent { at, now: self.now });
        }
        let seq = self.seq;
        self.heap
            .replace_top(Entry {
                time: at.0,
                seq,
                event,
            })
            .expect("an event pending");
        self.seq += 1;
        Ok(())
    }

    /// Drop the event [`peek_pending`](Self::peek_pending) returned.
    #[inline]
    pub fn discard_top(&mut self) {
        self.heap.pop();
    }

    #[inline]
    pub fn pop_until(&mut self, limit: Time) -> Option<(Time, E)> {
        match self.peek_time() {
            Some(t) if t <= limit => self.pop(),
            _ => None,
        }
    }

    /// The time of the earliest pending event, without removing it.
    #[inline]
    pub fn peek_time(&self) -> Option<Time> {
        self.heap.peek().map(|e| Time(e.time))
    }

    /// Number of pending events.
    #[inline]
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// True when no event is pending.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Total number of events ever pushed (a cheap work counter).
    pub fn pushed(&self) -> u64 {
        self.seq
    }

    /// Move the clock forward to `t` with no event (e.g. to the end of a
    /// horizon). Refused if `t` is in the past or after a pending event,
    /// since either would let the clock run backwards later.
    pub fn advance_to(&mut self, t: Time) -> Result<(), PastEvent> {
        if t < self.now {
            return Err(PastEvent {
                at: t,
                now: self.now,
            });
        }
        if let Some(next) = self.peek_time() {
            if next < t {
                return Err(PastEvent { at: next, now: t });
            }
        }
        self.now = t;
        Ok(())
    }
}

/// An [`EventQueue`] driven one handled event at a time, with the handled
/// event left on top of the heap until the handler's first new event
/// replaces it ([`EventQueue::replace_top`]: one sift where `pop` then
/// `push` take two; the same sequence numbers, so the same order). A
/// handler that schedules nothing has its event dropped when the next is
/// taken.
pub struct TopQueue<E> {
    q: EventQueue<E>,
    /// The event [`take_next`](Self::take_next) returned is still on top.
    top: bool,
}

impl<E: Copy> TopQueue<E> {
    /// An empty queue with room for `n` pending events.
    pub fn with_capacity(n: usize) -> Self {
        TopQueue {
            q: EventQueue::with_capacity(n),
            top: false,
        }
    }

    /// The next event to handle (the one handled before is dropped if
    /// nothing replaced it).
    #[inline]
    pub fn take_next(&mut self) -> Option<(Time, E)> {
        if std::mem::take(&mut self.top) {
            self.q.discard_top();
        }
        let e = self.q.peek_pending()?;
        self.top = true;
        Some(e)
    }

    /// Schedule `event` at `at`: the first of a handler's events takes the
    /// handled one's place.
    #[inline]
    pub fn push(&mut self, at: Time, event: E) -> Result<(), PastEvent> {
        if std::mem::take(&mut self.top) {
            let r = self.q.replace_top(at, event);
            self.top = r.is_err();
            r
        } else {
            self.q.push(at, event)
        }
    }

    /// The time of the last event taken.
    #[inline]
    pub fn now(&self) -> Time {
        self.q.now()
    }

    /// Total number of events ever pushed.
    pub fn pushed(&self) -> u64 {
        self.q.pushed()
    }
}

/// An [`EventQueue`] with a FIFO lane beside its heap, for events a model
/// schedules a fixed delay after the clock (a CPU's next operation after
/// `work_ns` of user work). Such events arrive in time order, so they need
/// no heap: the lane keeps them in push order and the earliest event is the
/// smaller key of the heap's top and the lane's front. Keys (time, push
/// number) are the ones an `EventQueue` would give the same calls, so the
/// events pop in exactly the same order; only the heap is smaller (sched-ops
/// on 16,384 per-CPU queues: 6,200 events in the heap instead of 14,400;
/// issue 31). An event pushed to the lane earlier than the lane's last goes
/// to the heap instead.
pub struct LaneQueue<E> {
    q: EventQueue<E>,
    lane: std::collections::VecDeque<Entry<E>>,
    /// Whether the event [`peek_pending`](Self::peek_pending) returned is
    /// the lane's front (else the heap's top).
    top_in_lane: bool,
}

impl<E: Copy> LaneQueue<E> {
    /// An empty queue with room for `heap` events in the heap and `lane`
    /// in the lane.
    pub fn with_capacity(heap: usize, lane: usize) -> Self {
        LaneQueue {
            q: EventQueue::with_capacity(heap),
            lane: std::collections::VecDeque::with_capacity(lane),
            top_in_lane: false,
        }
    }

    /// The current simulated time: the time of the last handled event.
    #[inline]
    pub fn now(&self) -> Time {
        self.q.now
    }

    /// Schedule `event` at `at` in the heap, as [`EventQueue::push`].
    #[inline]
    pub fn push(&mut self, at: Time, event: E) -> Result<(), PastEvent> {
        self.q.push(at, event)
    }

    /// Schedule `event` at `at` in the lane (in the heap if `at` is before
    /// the lane's last event); same key and order as [`push`](Self::push).
    #[inline]
    pub fn push_lane(&mut self, at: Time, event: E) -> Result<(), PastEvent> {
        self.not_past(at)?;
        if self.in_lane_order(at) {
            self.append(at, event);
        } else {
            self.q.insert(at, event);
        }
        Ok(())
    }

    /// Refused as [`EventQueue::push`] refuses: `at` before the clock.
    #[inline(always)]
    fn not_past(&self, at: Time) -> Result<(), PastEvent> {
        if at < self.q.now {
            return Err(PastEvent {
                at,
                now: self.q.now,
            });
        }
        Ok(())
    }

    /// Whether an event at `at` keeps the lane in time order.
    #[inline(always)]
    fn in_lane_order(&self, at: Time) -> bool {
        self.lane.back().is_none_or(|b| b.time <= at.0)
    }

    /// The lane's new last event, with the next push number.
    #[inline(always)]
    fn append(&mut self, at: Time, event: E) {
        let seq = self.q.seq;
        self.q.seq += 1;
        self.lane.push_back(Entry {
            time: at.0,
            seq,
            event,
        });
    }

    /// Whether the lane's front comes before the heap's top.
    #[inline(always)]
    fn lane_first(&self) -> bool {
        match (self.lane.front(), self.q.heap.peek()) {
            (Some(l), Some(h)) => l.key() < h.key(),
            (l, _) => l.is_some(),
        }
    }

    /// The time of the earliest pending event.
    #[inline]
    pub fn peek_time(&self) -> Option<Time> {
        match (self.lane.front(), self.q.heap.peek()) {
            (Some(l), Some(h)) => Some(Time(l.time.min(h.time))),
            (l, h) => l.or(h).map(|e| Time(e.time)),
        }
    }

    /// The earliest event, left pending while the caller handles it, as
    /// [`EventQueue::peek_pending`]; finish with one of the `replace_top`s
    /// or [`discard_top`](Self::discard_top).
    #[inline]
    pub fn peek_pending(&mut self) -> Option<(Time, E)>
    where
        E: Copy,
    {
        self.top_in_lane = self.lane_first();
        let top = if self.top_in_lane {
            self.lane.front()?
        } else {
            self.q.heap.peek()?
        };
        let at = Time(top.time);
        debug_assert!(at >= self.q.now, "event queue clock went backwards");
        self.q.now = at;
        Some((at, top.event))
    }

    /// Replace the handled event with `event` at `at` in the heap.
    #[inline]
    pub fn replace_top(&mut self, at: Time, event: E) -> Result<(), PastEvent> {
        if self.top_in_lane {
            self.q.push(at, event)?;
            self.lane.pop_front();
            Ok(())
        } else {
            self.q.replace_top(at, event)
        }
    }

    /// Replace the handled event with `event` at `at` in the lane.
    #[inline]
    pub fn replace_top_lane(&mut self, at: Time, event: E) -> Result<(), PastEvent> {
        self.not_past(at)?;
        if !self.in_lane_order(at) {
            // Out of the lane's order: to the heap, in one sift where the
            // handled event is the heap's top.
            return self.replace_top(at, event);
        }
        self.append(at, event);
        self.discard_top();
        Ok(())
    }

    /// Drop the handled event.
    #[inline]
    pub fn discard_top(&mut self) {
        if self.top_in_lane {
            self.lane.pop_front();
        } else {
            self.q.heap.pop();
        }
    }

    /// Number of pending events.
    #[inline]
    pub fn len(&self) -> usize {
        self.q.len() + self.lane.len()
    }

    /// True when no event is pending.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Total number of events ever pushed (a cheap work counter).
    pub fn pushed(&self) -> u64 {
        self.q.pushed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A small deterministic generator for the tests' random steps.
    fn lcg(mut x: u64) -> impl FnMut() -> u64 {
        move || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            x >> 33
        }
    }

    /// Handling the top in place (other events pushed meanwhile, then the
    /// handler's next replacing it, or nothing) gives the same events in
    /// the same order as pop then push, ties included.
    #[test]
    fn peek_pending_then_replace_is_pop_then_push() {
        let mut a = EventQueue::new();
        let mut b = EventQueue::new();
        for i in 0..50u64 {
            a.push(Time(i % 7), i).unwrap();
            b.push(Time(i % 7), i).unwrap();
        }
        let mut x = 12345u64;
        let mut next = 1000u64;
        for _ in 0..5000 {
            let Some((t, e)) = a.pop() else { break };
            assert_eq!(b.peek_pending(), Some((t, e)));
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            // Sometimes another event first (a grant to a waiter), ties often.
            if x >> 62 == 0 {
                let other = t + Dur((x >> 20) % 3);
                a.push(other, next).unwrap();
                b.push(other, next).unwrap();
                next += 1;
            }
            if !(x >> 40).is_multiple_of(8) {
                let at = t + Dur((x >> 30) % 4);
                a.push(at, e).unwrap();
                b.replace_top(at, e).unwrap();
            } else {
                b.discard_top();
            }
            assert_eq!(a.len(), b.len());
            assert_eq!(a.pushed(), b.pushed());
        }
        while let Some(e) = a.pop() {
            assert_eq!(b.pop(), Some(e));
        }
        assert!(b.is_empty());
    }

    /// With thousands pending (a deep heap), pops,
    /// pushes and in-place replacements give the events in the order of a
    /// sorted set of (time, push number).
    #[test]
    fn deep_heap_pops_in_key_order() {
        use std::collections::BTreeSet;
        let mut q = EventQueue::new();
        let mut reference = BTreeSet::new();
        let mut rand = lcg(99u64);
        let mut id = 0u64;
        for _ in 0..5000 {
            let at = Time(rand() % 3000);
            q.push(at, id).unwrap();
            reference.insert((at, id));
            id += 1;
        }
        for round in 0..40_000 {
            let want = reference.pop_first();
            match rand() % 4 {
                0 => {
                    assert_eq!(q.pop(), want, "round {round}");
                    if let Some((t, _)) = want {
                        let at = t + Dur(rand() % 500);
                        q.push(at, id).unwrap();
                        reference.insert((at, id));
                        id += 1;
                    }
                }
                1 => assert_eq!(q.pop(), want, "round {round}"),
                _ => {
                    assert_eq!(q.peek_pending(), want, "round {round}");
                    let Some((t, _)) = want else { break };
                    let at = t + Dur(rand() % 200);
                    q.replace_top(at, id).unwrap();
                    reference.insert((at, id));
                    id += 1;
                }
            }
            assert_eq!(q.len(), reference.len());
        }
    }

    /// A lane queue given the calls an `EventQueue` gets (pushes to heap or
    /// lane, fixed delays and not, handled events replaced into either or
    /// dropped) hands out the same events at the same times, ties included.
    #[test]
    fn lane_queue_pops_as_event_queue() {
        let mut a = EventQueue::new();
        let mut b = LaneQueue::with_capacity(0, 0);
        let mut rand = lcg(7u64);
        for i in 0..200u64 {
            let at = Time(rand() % 50);
            a.push(at, i).unwrap();
            b.push(at, i).unwrap();
        }
        let mut id = 1000u64;
        let (mut from_lane, mut fell_back) = (0, 0);
        for round in 0..50_000 {
            let want = a.peek_pending();
            assert_eq!(b.peek_pending(), want, "round {round}");
            assert_eq!(b.peek_time(), want.map(|w| w.0));
            let Some((t, _)) = want else { break };
            from_lane += usize::from(b.top_in_lane);
            let r = rand();
            if r.is_multiple_of(5) {
                // Another event first (a grant), to the heap, ties often.
                let at = t + Dur(rand() % 3);
                a.push(at, id).unwrap();
                b.push(at, id).unwrap();
                id += 1;
            }
            // A fixed delay mostly (in order for the lane), sometimes a
            // shorter one (out of order: the heap takes it).
            let delay = if r.is_multiple_of(7) { rand() % 40 } else { 40 };
            let at = t + Dur(delay);
            match (r >> 8) % 8 {
                0 => {
                    a.discard_top();
                    b.discard_top();
                }
                1 | 2 => {
                    a.replace_top(at, id).unwrap();
                    b.replace_top(at, id).unwrap();
                }
                _ => {
                    fell_back += usize::from(b.lane.back().is_some_and(|l| l.time > at.0));
                    a.replace_top(at, id).unwrap();
                    b.replace_top_lane(at, id).unwrap();
                }
            }
            id += 1;
            assert_eq!(a.len(), b.len());
            assert_eq!(a.pushed(), b.pushed());
            assert_eq!(a.now(), b.now());
            if a.is_empty() {
                a.push(t, id).unwrap();
                b.push_lane(t, id).unwrap();
                id += 1;
            }
        }
        // Both paths were taken: events handled from the lane, and lane
        // pushes out of order that went to the heap.
        assert!(
            from_lane > 1000 && fell_back > 100,
            "{from_lane} {fell_back}"
        );
        assert_eq!(
            b.push_lane(Time(0), 0),
            Err(PastEvent {
                at: Time(0),
                now: b.now()
            })
        );
    }

    #[test]
    fn pops_in_time_order_and_advances_clock() {
        let mut q = EventQueue::new();
        q.push(Time(30), 'c').unwrap();
        q.push(Time(10), 'a').unwrap();
        q.push(Time(20), 'b').unwrap();
        assert_eq!(q.len(), 3);
        assert_eq!(q.peek_time(), Some(Time(10)));
        assert_eq!(q.pop(), Some((Time(10), 'a')));
        assert_eq!(q.now(), Time(10));
        assert_eq!(q.pop(), Some((Time(20), 'b')));
        assert_eq!(q.pop(), Some((Time(30), 'c')));
        assert_eq!(q.pop(), None);
        assert_eq!(q.now(), Time(30));
        assert!(q.is_empty());
    }

    #[test]
    fn equal_times_pop_in_push_order() {
        let mut q = EventQueue::new();
        for i in 0..100u32 {
            // Interleave two times so the heap has to reorder.
            q.push(Time(5 + (i % 2) as u64), i).unwrap();
        }
        let popped: Vec<u32> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        let mut want: Vec<u32> = (0..100).filter(|i| i % 2 == 0).collect();
        want.extend((0..100).filter(|i| i % 2 == 1));
        assert_eq!(popped, want);
    }

    #[test]
    fn past_events_are_refused_and_leave_queue_unchanged() {
        let mut q = EventQueue::new();
        q.push(Time(100), 1).unwrap();
        q.pop();
        assert_eq!(
            q.push(Time(99), 2),
            Err(PastEvent {
                at: Time(99),
                now: Time(100)
            })
        );
        assert!(q.is_empty());
        // Now is allowed.
        q.push(Time(100), 3).unwrap();
        assert_eq!(q.push_after(Dur(5), 4), Time(105));
        assert_eq!(q.pop(), Some((Time(100), 3)));
        assert_eq!(q.pop(), Some((Time(105), 4)));
    }

    #[test]
    fn pop_until_and_advance_respect_horizon() {
        let mut q = EventQueue::new();
        q.push(Time(10), 'a').unwrap();
        q.push(Time(50), 'b').unwrap();
        assert_eq!(q.pop_until(Time(20)), Some((Time(10), 'a')));
        assert_eq!(q.pop_until(Time(20)), None);
        assert!(
            q.advance_to(Time(60)).is_err(),
            "would skip a pending event"
        );
        q.advance_to(Time(20)).unwrap();
        assert_eq!(q.now(), Time(20));
        assert!(q.advance_to(Time(19)).is_err());
        assert_eq!(q.pop(), Some((Time(50), 'b')));
    }

    #[derive(Debug, Clone)]
    enum Op {
        Push(u64),
        Pop,
    }

    fn ops() -> impl Strategy<Value = Vec<Op>> {
        prop::collection::vec(
            prop_oneof![
                // Small delays so that equal times are common.
                (0u64..8).prop_map(Op::Push),
                Just(Op::Pop),
            ],
            0..400,
        )
    }

    proptest! {
        /// Times never decrease, equal times keep push order, and every
        /// pushed event pops exactly once.
        #[test]
        fn random_push_pop_is_ordered_and_conserving(ops in ops()) {
            let mut q: EventQueue<u64> = EventQueue::new();
            let mut next_id = 0u64;
            let mut last: Option<(Time, u64)> = None;
            let mut seen = Vec::new();
            let drain = |q: &mut EventQueue<u64>, last: &mut Option<(Time, u64)>,
                             seen: &mut Vec<u64>| {
                if let Some((t, id)) = q.pop() {
                    if let Some((lt, lid)) = *last {
                        prop_assert!(t >= lt, "time went back: {t} after {lt}");
                        // Ids are pushed in increasing order; at equal times
                        // FIFO means increasing ids.
                        if t == lt {
                            prop_assert!(id > lid, "FIFO broken at {t}: {id} after {lid}");
                        }
                    }
                    prop_assert_eq!(q.now(), t);
                    *last = Some((t, id));
                    seen.push(id);
                }
                Ok(())
            };
            for op in &ops {
                match *op {
                    Op::Push(d) => {
                        let at = q.now() + Dur(d);
                        q.push(at, next_id).unwrap();
                        next_id += 1;
                    }
                    Op::Pop => drain(&mut q, &mut last, &mut seen)?,
                }
            }
            while !q.is_empty() {
                drain(&mut q, &mut last, &mut seen)?;
            }
            seen.sort_unstable();
            prop_assert_eq!(seen, (0..next_id).collect::<Vec<_>>());
        }
    }

    #[derive(Debug, Clone)]
    enum HeapOp {
        Push(u64),
        Pop,
        Replace(u64),
    }

    proptest! {
        /// The heap hands out entries as the std `BinaryHeap` of the same
        /// keys does (the queue's old store), through pushes, pops and
        /// replacements of the top, on heaps from empty to a few hundred
        /// deep, with many equal times (the push number then decides).
        #[test]
        fn heap_pops_as_the_std_heap(
            ops in prop::collection::vec(
                prop_oneof![
                    3 => (0u64..16).prop_map(HeapOp::Push),
                    1 => Just(HeapOp::Pop),
                    2 => (0u64..16).prop_map(HeapOp::Replace),
                ],
                0..1500,
            )
        ) {
            use std::cmp::Reverse;
            let mut ours: Heap<u32> = Heap::with_capacity(0);
            let mut std_heap = std::collections::BinaryHeap::new();
            let mut seq = 0u64;
            for op in ops {
                let top = ours.peek().map(|e| (e.time, e.seq, e.event));
                let want_top = std_heap.peek().map(|&Reverse(k)| k);
                prop_assert_eq!(top, want_top);
                prop_assert_eq!(ours.len(), std_heap.len());
                match op {
                    HeapOp::Push(t) => {
                        let event = (seq as u32).wrapping_mul(7);
                        ours.push(Entry { time: t, seq, event });
                        std_heap.push(Reverse((t, seq, event)));
                        seq += 1;
                    }
                    HeapOp::Pop => {
                        let got = ours.pop().map(|e| (e.time, e.seq, e.event));
                        prop_assert_eq!(got, std_heap.pop().map(|Reverse(k)| k));
                    }
                    HeapOp::Replace(d) => {
                        let Some(Reverse((t, _, _))) = std_heap.pop() else {
                            let none = ours.replace_top(Entry { time: 0, seq, event: 0 });
                            prop_assert!(none.is_none());
                            continue;
                        };
                        let event = seq as u32;
                        let old = ours.replace_top(Entry { time: t + d, seq, event });
                        prop_assert_eq!(old.map(|e| e.time), Some(t));
                        std_heap.push(Reverse((t + d, seq, event)));
                        seq += 1;
                    }
                }
            }
            while let Some(Reverse(k)) = std_heap.pop() {
                prop_assert_eq!(ours.pop().map(|e| (e.time, e.seq, e.event)), Some(k));
            }
            prop_assert!(ours.is_empty());
        }
    }

    #[test]
    fn pop_push_after_matches_pop_then_push() {
        let mut a = EventQueue::new();
        let mut b = EventQueue::new();
        for (i, t) in [5u64, 3, 9, 3, 7, 1].iter().enumerate() {
            a.push(Time(*t), i).unwrap();
            b.push(Time(*t), i).unwrap();
        }
        for step in 0..50u64 {
            let d = Dur::from_ns(step % 4);
            let x = a.pop_push_after(d, 100 + step as usize);
            let y = b.pop();
            b.push_after(d, 100 + step as usize);
            assert_eq!(x, y, "step {step}");
        }
    }
}
