//! The run queue as state the drivers share (`struct rq` in
//! `kernel/sched/sched.h`, 2.4's `runqueue_head`): its spinlock and what
//! each CPU wants it for ([`RqLock`]), and the queued tasks with
//! `goodness()`'s pick ([`TaskQueues`]). The experiments that drive them
//! (`workload/aim7.rs`, `workload/boot_balance.rs`) own only their events
//! and counters.

use crate::engine::{CostTable, Grant, Lock, Time};
use std::collections::VecDeque;

/// A run-queue lock (`rq->lock`, 2.4's `runqueue_lock`) and, per CPU, what
/// it asked the lock for (`W`) and when: a CPU asks, is granted (now or on
/// a release), holds it for its critical section and releases it.
pub struct RqLock<'c, W> {
    pub lock: Lock<&'c CostTable>,
    wants: Vec<Option<(W, Time)>>,
}

impl<'c, W: Copy> RqLock<'c, W> {
    pub fn new(lock: Lock<&'c CostTable>, cpus: usize) -> Self {
        RqLock {
            lock,
            wants: vec![None; cpus],
        }
    }

    /// CPU `cpu` (on `node`) asks for the lock at `now` for `w`: when it
    /// holds it, if at once (else a later [`release`](Self::release) grants it).
    pub fn want(&mut self, now: Time, cpu: usize, node: usize, w: W) -> Option<Time> {
        self.wants[cpu] = Some((w, now));
        self.lock.acquire(now, cpu, node)
    }

    /// What `cpu` last asked the lock for, and when; None if it never asked
    /// or is [`done`](Self::done).
    pub fn wanting(&self, cpu: usize) -> Option<(W, Time)> {
        self.wants[cpu]
    }

    /// `cpu` has nothing more to do under the lock.
    pub fn done(&mut self, cpu: usize) {
        self.wants[cpu] = None;
    }

    /// `cpu` releases the lock at `now`: the next holder, if any, and when.
    pub fn release(&mut self, now: Time, cpu: usize) -> Option<Grant> {
        self.lock.release(now, cpu)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskState {
    Running,
    Queued,
    Sleeping,
}

/// A task as the run queues see it.
#[derive(Debug, Clone)]
pub struct Task {
    pub state: TaskState,
    pub last_cpu: usize,
    /// The queue it is on or would go to (node under NUMA, 0 under SMP).
    pub queue: usize,
    /// Bumped at every enqueue, so stale list entries can be skipped.
    stamp: u64,
}

/// The queued tasks of one or more run queues (2.4's one queue, wildfire's
/// one per node): arrival order per queue and, per CPU, the queued tasks
/// that last ran there (`goodness()`'s `PROC_CHANGE_PENALTY` pick). Lists
/// are lazy: a task that moves leaves a stale entry behind, skipped by
/// its stamp.
pub struct TaskQueues {
    pub tasks: Vec<Task>,
    fifo: Vec<VecDeque<(usize, u64)>>,
    mine: Vec<VecDeque<(usize, u64)>>,
    len: Vec<usize>,
}

impl TaskQueues {
    pub fn new(queues: usize, cpus: usize, tasks: usize) -> Self {
        TaskQueues {
            tasks: Vec::with_capacity(tasks),
            fifo: vec![VecDeque::new(); queues],
            mine: vec![VecDeque::new(); cpus],
            len: vec![0; queues],
        }
    }

    /// A new task, asleep, last on `cpu`, belonging to `queue`; its index.
    pub fn add_sleeping(&mut self, cpu: usize, queue: usize) -> usize {
        self.tasks.push(Task {
            state: TaskState::Sleeping,
            last_cpu: cpu,
            queue,
            stamp: 0,
        });
        self.tasks.len() - 1
    }

    /// Tasks queued on `qi`.
    pub fn len(&self, qi: usize) -> usize {
        self.len[qi]
    }

    /// `add_to_runqueue()`: task `i` joins queue `qi`, preferred by CPU
    /// `pref` (the CPU it ran on, or the idle one it was sent to, which
    /// becomes its last CPU).
    pub fn enqueue(&mut self, i: usize, qi: usize, pref: usize) {
        let task = &mut self.tasks[i];
        task.state = TaskState::Queued;
        task.queue = qi;
        task.stamp += 1;
        self.fifo[qi].push_back((i, task.stamp));
        self.mine[pref].push_back((i, task.stamp));
        task.last_cpu = pref;
        self.len[qi] += 1;
    }

    /// `goodness()`'s pick from queue `qi` for `cpu`: a task that last ran
    /// on it, else the one queued longest; it leaves the queue (its state
    /// is the caller's to set). Stale entries are dropped on the way.
    pub fn pick(&mut self, cpu: usize, qi: usize) -> Option<usize> {
        let t = &self.tasks;
        let live = |&(i, s): &(usize, u64)| {
            t[i].state == TaskState::Queued && t[i].stamp == s && t[i].queue == qi
        };
        let mut picked = None;
        let mine = &mut self.mine[cpu];
        while let Some(e) = mine.front() {
            if live(e) {
                picked = mine.pop_front().map(|(i, _)| i);
                break;
            }
            if t[e.0].state == TaskState::Queued && t[e.0].stamp == e.1 {
                // Queued elsewhere: not this queue's to take; keep looking.
                break;
            }
            mine.pop_front();
        }
        if picked.is_none() {
            let fifo = &mut self.fifo[qi];
            while let Some(e) = fifo.pop_front() {
                if live(&e) {
                    picked = Some(e.0);
                    break;
                }
            }
        }
        if picked.is_some() {
            self.len[qi] -= 1;
        }
        picked
    }

    /// Every task is in exactly one place: running on the CPU that names
    /// it in `curr`, counted in one queue, or asleep.
    pub fn conserved(&self, curr: &[Option<usize>]) -> bool {
        let t = &self.tasks;
        let running = t.iter().filter(|x| x.state == TaskState::Running).count();
        let queued = t.iter().filter(|x| x.state == TaskState::Queued).count();
        let on_cpus = curr.iter().flatten().count();
        let named_right = curr
            .iter()
            .flatten()
            .all(|&i| t[i].state == TaskState::Running);
        let per_queue_ok = (0..self.len.len()).all(|k| {
            t.iter()
                .filter(|x| x.state == TaskState::Queued && x.queue == k)
                .count()
                == self.len[k]
        });
        running == on_cpus
            && named_right
            && per_queue_ok
            && queued == self.len.iter().sum::<usize>()
    }
}

/// `reschedule_idle()`'s choice: the idle CPU in `range` idle longest, not
/// already kicked.
pub fn longest_idle(
    idle_since: &[Option<Time>],
    kicked: &[bool],
    range: std::ops::Range<usize>,
) -> Option<usize> {
    range
        .filter(|&k| !kicked[k])
        .filter_map(|k| idle_since[k].map(|t| (t, k)))
        .min()
        .map(|(_, k)| k)
}
