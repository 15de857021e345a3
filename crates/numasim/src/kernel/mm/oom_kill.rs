//! The OOM killer (`mm/oom_kill.c`): stock 2.4.21's `out_of_memory()` and
//! SGI's swap-failure thread ([ALTIX04] B10, B11).

use super::page_alloc::PageAlloc;
use super::vm::{Vm, TICK_NS};
use crate::kernel::mm::sysctl_vm::{OomKind, OomVictim};

const NS: u64 = 1_000_000_000;

/// 2.4.21 `out_of_memory()`'s static state (mm/oom_kill.c).
#[derive(Debug, Clone, Default)]
pub struct Oom24 {
    first: u64,
    last: u64,
    count: u32,
    last_kill: Option<u64>,
}

/// SGI's OOM thread and the swap-out counters that wake it.
#[derive(Debug, Clone, Default)]
pub struct SwapFailureOom {
    window_start: u64,
    attempts: u64,
    successes: u64,
    /// The verdict of the last complete window: swap looked full.
    last_window_full: bool,
    /// When the sleeping thread will check again, if it was woken.
    kill_at: Option<u64>,
    attempts_since_sleep: u64,
}

impl SwapFailureOom {
    /// `try_to_swap_out()` counting attempts and successes.
    pub fn count(&mut self, attempts: u64, successes: u64) {
        self.attempts += attempts;
        self.successes += successes;
        self.attempts_since_sleep += attempts;
    }
}

impl Vm {
    /// `out_of_memory()` of 2.4.21, called after `shrink_caches()` failed at
    /// every priority, at time `now`. True: call `oom_kill()`.
    pub(super) fn out_of_memory_24(&mut self, now: u64) -> bool {
        if self.sys.oom != OomKind::Linux24 {
            return false;
        }
        let o = &mut self.oom24;
        // Enough swap space left: not OOM.
        if self.swap.free() > 0 {
            return false;
        }
        let since = now.saturating_sub(o.last);
        o.last = now;
        let kill = if since > 5 * NS {
            // More than 5 s since the last call: a new episode.
            false
        } else if now.saturating_sub(o.first) < NS {
            return false;
        } else {
            o.count += 1;
            if o.count < 10 {
                return false;
            }
            if o.last_kill.is_some_and(|k| now.saturating_sub(k) < 5 * NS) {
                return false;
            }
            o.last_kill = Some(now);
            true
        };
        // reset:
        o.first = now;
        o.count = 0;
        kill
    }

    /// The swap-failure thread, once per tick (B11).
    pub(super) fn swap_oom_tick(&mut self, mm: &mut PageAlloc) {
        if self.sys.oom != OomKind::SwapFailure {
            return;
        }
        let now = self.now_ns + TICK_NS;
        let window = self.sys.oom_swap_window_s * NS;
        let min = self.sys.oom_swap_attempts_min;
        let pct = self.sys.oom_swap_success_pct;
        let o = &mut self.swap_oom;
        if now - o.window_start >= window {
            o.last_window_full =
                o.attempts > min && (o.successes as f64) < pct / 100.0 * o.attempts as f64;
            if o.last_window_full && o.kill_at.is_none() {
                // try_to_swap_out() wakes the thread; it sleeps oom_wait_s.
                o.kill_at = Some(now + self.sys.oom_wait_s * NS);
                o.attempts_since_sleep = 0;
            }
            o.window_start = now;
            o.attempts = 0;
            o.successes = 0;
        }
        let Some(at) = o.kill_at else { return };
        if now < at {
            return;
        }
        let persists =
            (self.swap.free() == 0 || o.last_window_full) && o.attempts_since_sleep >= min;
        if persists {
            o.kill_at = Some(now + self.sys.oom_wait_s * NS);
            o.attempts_since_sleep = 0;
            let victim = self.pick_victim(usize::MAX);
            self.oom_kill(mm, victim, now);
        } else {
            o.kill_at = None;
        }
    }

    /// The victim: the task with the most memory (mainline `badness()` is
    /// led by total VM size), or the allocating task.
    pub(super) fn pick_victim(&self, allocating: usize) -> Option<usize> {
        let alive = |i: &usize| self.tasks[*i].killed_at_ns.is_none();
        if self.sys.oom_victim == OomVictim::Allocating
            && allocating < self.tasks.len()
            && alive(&allocating)
        {
            return Some(allocating);
        }
        (0..self.tasks.len()).filter(alive).max_by_key(|&i| {
            (
                self.tasks[i].resident() + self.tasks[i].swapped,
                std::cmp::Reverse(i),
            )
        })
    }

    pub(super) fn oom_kill(&mut self, mm: &mut PageAlloc, victim: Option<usize>, now: u64) {
        let Some(v) = victim else { return };
        self.release_task(mm, v);
        self.tasks[v].killed_at_ns = Some(now);
        self.stats.oom_kills += 1;
        self.kills.push((now, v));
    }
}
