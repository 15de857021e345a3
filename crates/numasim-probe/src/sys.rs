//! Every `unsafe` block and raw system call of numasim lives in this module.
//! Each wrapper states what the kernel requires and why the call is sound.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};

/// Monotonic clock in nanoseconds (`CLOCK_MONOTONIC`), comparable between
/// processes on one host, which the multi-process fault test relies on.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// One `gettimeofday()` call (through the vDSO where the kernel offers one,
/// exactly as a program would call it). Returns microseconds to keep the
/// result live.
#[inline(never)]
pub fn gettimeofday_us() -> i64 {
    let mut tv = libc::timeval {
        tv_sec: 0,
        tv_usec: 0,
    };
    // SAFETY: `tv` is a valid, writable timeval; a null timezone is allowed.
    unsafe { libc::gettimeofday(&mut tv, std::ptr::null_mut()) };
    tv.tv_sec * 1_000_000 + tv.tv_usec
}

/// One `clock_gettime(CLOCK_REALTIME)` call, as `gettimeofday_us`.
#[inline(never)]
pub fn clock_gettime_ns() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

/// CPU time (user + system) consumed by the calling thread, in ns.
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_THREAD_CPUTIME_ID is supported since 2.6.12.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

pub fn page_size() -> u64 {
    // SAFETY: sysconf has no memory-safety preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as u64
    } else {
        4096
    }
}

pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is writable for its full length; gethostname NUL-terminates
    // within `len` or truncates, and we stop at the first NUL or the end.
    let r = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if r != 0 {
        return "host".into();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

// ---------------------------------------------------------------------------
// CPU affinity

/// CPUs this process may run on (`sched_getaffinity`), which respects
/// `taskset` and cpuset cgroups.
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: cpu_set_t is plain data; all-zero is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is valid for writes of size_of::<cpu_set_t>() bytes.
    let r = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if r != 0 {
        return vec![0];
    }
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: `c` < CPU_SETSIZE, the bound CPU_ISSET requires.
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect()
}

/// Pin the calling thread to one CPU.
pub fn pin_to_cpu(cpu: usize) -> io::Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: all-zero is a valid empty cpu_set_t.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `cpu` < CPU_SETSIZE was checked above.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: `set` is a valid cpu_set_t of the size passed; pid 0 is the calling thread.
    let r = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Restore the calling thread's affinity to a set of CPUs.
pub fn set_affinity(cpus: &[usize]) {
    // SAFETY: all-zero is a valid empty cpu_set_t.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus.iter().filter(|&&c| c < libc::CPU_SETSIZE as usize) {
        // SAFETY: bounded by the filter above.
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    // SAFETY: `set` is a valid cpu_set_t of the size passed. Failure leaves the old mask, harmless.
    unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
}

// ---------------------------------------------------------------------------
// Memory mappings

/// Which pages back a mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageKind {
    /// Base pages; `MADV_NOHUGEPAGE` so that THP "always" does not interfere.
    Base,
    /// Transparent huge pages requested with `MADV_HUGEPAGE`.
    Thp,
    /// hugetlbfs pages from the reserved pool (`MAP_HUGETLB`).
    Hugetlb,
}

impl PageKind {
    pub fn label(self) -> &'static str {
        match self {
            PageKind::Base => "4k",
            PageKind::Thp => "thp",
            PageKind::Hugetlb => "hugetlb",
        }
    }
}

/// Size of a PMD huge page on x86-64 and arm64 with 4 KiB base pages.
pub const HUGE_2M: usize = 2 << 20;

/// An anonymous private mapping, unmapped on drop.
pub struct Mapping {
    ptr: *mut u8,
    /// What the caller asked for.
    len: usize,
    /// What was mapped (rounded and, for THP, with alignment slack).
    map_ptr: *mut u8,
    map_len: usize,
}

// SAFETY: the mapping is plain memory owned by this value; access is through
// `&`/`&mut` borrows, so the usual aliasing rules keep threads apart.
unsafe impl Send for Mapping {}
// SAFETY: as above; shared access only reads through `&[u8]`.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Map `len` bytes (zero-filled on first touch) with the given pages.
    /// THP mappings are aligned to 2 MiB so every byte can be in a huge page.
    pub fn new(len: usize, kind: PageKind) -> io::Result<Mapping> {
        let len = len.max(1);
        let (map_len, extra_flags) = match kind {
            PageKind::Base => (round_up(len, page_size() as usize), 0),
            PageKind::Thp => (round_up(len, HUGE_2M) + HUGE_2M, 0),
            PageKind::Hugetlb => (round_up(len, HUGE_2M), libc::MAP_HUGETLB),
        };
        // SAFETY: an anonymous private mapping at an address the kernel picks;
        // no existing memory is affected. The result is checked for MAP_FAILED.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | extra_flags,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let map_ptr = p as *mut u8;
        let ptr = match kind {
            PageKind::Thp => {
                let a = round_up(map_ptr as usize, HUGE_2M);
                a as *mut u8
            }
            _ => map_ptr,
        };
        let m = Mapping {
            ptr,
            len,
            map_ptr,
            map_len,
        };
        let advice = match kind {
            PageKind::Base => Some(libc::MADV_NOHUGEPAGE),
            PageKind::Thp => Some(libc::MADV_HUGEPAGE),
            PageKind::Hugetlb => None,
        };
        if let Some(a) = advice {
            // SAFETY: the range lies inside our own mapping. madvise only changes
            // how future faults are served; no memory is freed.
            let r = unsafe { libc::madvise(m.map_ptr.cast(), m.map_len, a) };
            // NOHUGEPAGE fails on kernels built without THP; that is what we want anyway.
            if r != 0 && kind == PageKind::Thp {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(m)
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr
    }

    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: `ptr..ptr+len` lies inside a live read/write mapping owned by self.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as `as_slice`, and `&mut self` guarantees exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }

    /// View as a slice of u64 (the mapping is page-aligned, so aligned for u64).
    pub fn as_u64_mut(&mut self) -> &mut [u64] {
        // SAFETY: page alignment exceeds u64 alignment; len/8 elements fit inside the mapping;
        // every bit pattern is a valid u64; `&mut self` gives exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr as *mut u64, self.len / 8) }
    }

    pub fn as_u64(&self) -> &[u64] {
        // SAFETY: as `as_u64_mut`, shared.
        unsafe { std::slice::from_raw_parts(self.ptr as *const u64, self.len / 8) }
    }

    /// Bind the mapping's pages to one node (`mbind(MPOL_BIND)`), before first touch.
    pub fn bind_to_node(&self, node: usize) -> io::Result<()> {
        const MPOL_BIND: libc::c_long = 2;
        let bits = 64usize;
        let words = node / bits + 1;
        let mut mask = vec![0u64; words];
        mask[node / bits] |= 1u64 << (node % bits);
        // SAFETY: raw mbind(2) on a range inside our own mapping; `mask` is valid for
        // `maxnode` = words*64 bits (the kernel reads maxnode-1 bits, rounded to longs).
        let r = unsafe {
            libc::syscall(
                libc::SYS_mbind,
                self.map_ptr as libc::c_long,
                self.map_len as libc::c_ulong,
                MPOL_BIND,
                mask.as_ptr(),
                (words * bits + 1) as libc::c_ulong,
                0 as libc::c_ulong,
            )
        };
        if r == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// The buffer's physically contiguous runs of base pages (from
    /// `/proc/self/pagemap`'s frame numbers): the scatter-gather segments a
    /// direct request over the whole buffer is built of, before the
    /// queue's `max_segment_size`. `None` where the frame numbers are
    /// hidden (they read as 0 without `CAP_SYS_ADMIN`) or a page is not
    /// present.
    pub fn phys_runs(&self) -> Option<u64> {
        pagemap_runs(self.ptr as usize, self.len)
    }

    /// Bytes of this mapping backed by transparent huge pages, from
    /// `/proc/self/smaps` (`AnonHugePages`). `None` where smaps cannot be read.
    pub fn thp_bytes(&self) -> Option<u64> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
        let start = self.map_ptr as usize;
        let end = start + self.map_len;
        let mut inside = false;
        let mut total = 0u64;
        for line in smaps.lines() {
            let first = line.split_whitespace().next().unwrap_or("");
            if let Some((a, b)) = first.split_once('-') {
                if let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16))
                {
                    inside = a < end && b > start;
                    continue;
                }
            }
            if inside {
                if let Some(rest) = line.strip_prefix("AnonHugePages:") {
                    let kb: u64 = rest
                        .trim()
                        .trim_end_matches("kB")
                        .trim()
                        .parse()
                        .unwrap_or(0);
                    total += kb * 1024;
                }
            }
        }
        Some(total)
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the region mmap returned; no borrow outlives self.
        unsafe { libc::munmap(self.map_ptr.cast(), self.map_len) };
    }
}

pub fn round_up(x: usize, to: usize) -> usize {
    x.div_ceil(to) * to
}

// ---------------------------------------------------------------------------
// Processes (first-touch faults in N processes)

/// Run `n` child processes. Each waits for a start signal, maps `bytes` of
/// anonymous memory with base pages, touches one byte per page, and reports
/// its start and end times (CLOCK_MONOTONIC). Returns the span from the
/// first start to the last end, in ns.
///
/// The children run only async-signal-safe code (mmap, stores, clock_gettime,
/// write, _exit) because the parent may have other threads.
pub fn fault_in_processes(n: usize, bytes: usize, cpus: &[usize]) -> io::Result<u64> {
    let mut go = [0i32; 2];
    let mut res = [0i32; 2];
    // SAFETY: `go`/`res` are valid arrays of two fds for pipe(2) to fill.
    if unsafe { libc::pipe(go.as_mut_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above.
    if unsafe { libc::pipe(res.as_mut_ptr()) } != 0 {
        let e = io::Error::last_os_error();
        close_fds(&go);
        return Err(e);
    }
    let page = page_size() as usize;
    let mut pids = Vec::with_capacity(n);
    // Affinity sets prepared before fork: no allocation in the child.
    let sets: Vec<libc::cpu_set_t> = (0..n)
        .map(|i| {
            // SAFETY: all-zero is a valid empty cpu_set_t.
            let mut s: libc::cpu_set_t = unsafe { std::mem::zeroed() };
            let c = cpus[i % cpus.len()];
            if c < libc::CPU_SETSIZE as usize {
                // SAFETY: bounded above.
                unsafe { libc::CPU_SET(c, &mut s) };
            }
            s
        })
        .collect();
    for set in sets.iter() {
        // SAFETY: fork has no memory-safety preconditions; the child branch below
        // calls only async-signal-safe functions and ends in _exit.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            let e = io::Error::last_os_error();
            reap(&pids);
            close_fds(&go);
            close_fds(&res);
            return Err(e);
        }
        if pid == 0 {
            // SAFETY: child process, async-signal-safe calls only, each on valid
            // arguments (own fds, own mapping, stack buffers); never returns.
            unsafe {
                libc::close(go[1]);
                libc::close(res[0]);
                libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set);
                let p = libc::mmap(
                    std::ptr::null_mut(),
                    bytes,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                    -1,
                    0,
                );
                if p == libc::MAP_FAILED {
                    libc::_exit(3);
                }
                libc::madvise(p, bytes, libc::MADV_NOHUGEPAGE);
                let mut b = 0u8;
                if libc::read(go[0], (&mut b as *mut u8).cast(), 1) != 1 {
                    libc::_exit(4);
                }
                let t0 = monotonic_ns();
                let base = p as *mut u8;
                let mut off = 0;
                while off < bytes {
                    std::ptr::write_volatile(base.add(off), 1);
                    off += page;
                }
                let t1 = monotonic_ns();
                let out = [t0, t1];
                let w = libc::write(res[1], out.as_ptr().cast(), 16);
                libc::_exit(if w == 16 { 0 } else { 5 });
            }
        }
        pids.push(pid);
    }
    // SAFETY: closing our copies of the child-side ends, which we own.
    unsafe {
        libc::close(go[0]);
        libc::close(res[1]);
    }
    let start = vec![1u8; n];
    // SAFETY: writing n bytes from a valid buffer into the pipe we own; n ≤ pipe capacity
    // for any plausible CPU count (64 KiB).
    let w = unsafe { libc::write(go[1], start.as_ptr().cast(), n) };
    // SAFETY: closing our own fd.
    unsafe { libc::close(go[1]) };
    let mut first = u64::MAX;
    let mut last = 0u64;
    let mut got = 0;
    if w == n as isize {
        for _ in 0..n {
            let mut buf = [0u64; 2];
            // SAFETY: reading at most 16 bytes into a 16-byte buffer from our own fd.
            let r = unsafe { libc::read(res[0], buf.as_mut_ptr().cast(), 16) };
            if r != 16 {
                break;
            }
            first = first.min(buf[0]);
            last = last.max(buf[1]);
            got += 1;
        }
    }
    // SAFETY: closing our own fd.
    unsafe { libc::close(res[0]) };
    reap(&pids);
    if got != n {
        return Err(io::Error::other(format!(
            "{} of {n} fault-test processes did not report (out of memory?)",
            n - got
        )));
    }
    Ok(last.saturating_sub(first))
}

fn close_fds(fds: &[i32; 2]) {
    for &fd in fds {
        // SAFETY: closing fds this module opened and still owns.
        unsafe { libc::close(fd) };
    }
}

fn reap(pids: &[libc::pid_t]) {
    for &pid in pids {
        let mut status = 0;
        // SAFETY: waiting for our own child; `status` is a valid out-pointer.
        unsafe { libc::waitpid(pid, &mut status, 0) };
    }
}

// ---------------------------------------------------------------------------
// Files

/// Open a file for direct I/O. `Ok(None)` where the filesystem refuses
/// `O_DIRECT` (EINVAL), e.g. tmpfs on older kernels.
pub fn open_direct(path: &std::path::Path, write: bool) -> io::Result<Option<std::fs::File>> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut o = std::fs::OpenOptions::new();
    if write {
        o.write(true).create(true).truncate(true);
    } else {
        o.read(true);
    }
    match o.custom_flags(libc::O_DIRECT).open(path) {
        Ok(f) => Ok(Some(f)),
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Drop a file's clean pages from the page cache (works unprivileged),
/// so that a following buffered read comes from the device.
pub fn drop_file_cache(f: &std::fs::File) -> io::Result<()> {
    use std::os::unix::io::AsRawFd;
    // SAFETY: fadvise on a valid fd we own; it only affects caching.
    let r = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(r))
    }
}

/// Free bytes for unprivileged users on the filesystem holding `path`.
pub fn fs_free_bytes(path: &std::path::Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs is plain data; all-zero is valid.
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a NUL-terminated path, `s` a valid out-pointer.
    let r = unsafe { libc::statvfs(c.as_ptr(), &mut s) };
    (r == 0).then(|| s.f_bavail as u64 * s.f_frsize as u64)
}

// ---------------------------------------------------------------------------
// Signals: Ctrl-C and SIGTERM set a flag the measurement loops poll, so the
// scratch directory is removed by ordinary Drop-based cleanup.

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_sig: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

pub fn stop_requested() -> bool {
    STOP.load(Ordering::Relaxed)
}

/// Installs the handlers; restores the previous ones on drop. The handlers
/// are one-shot (`SA_RESETHAND`): a second Ctrl-C kills the process at once.
pub struct SignalGuard {
    old: Vec<(libc::c_int, libc::sigaction)>,
}

impl SignalGuard {
    pub fn install() -> SignalGuard {
        STOP.store(false, Ordering::SeqCst);
        let mut old = Vec::new();
        for sig in [libc::SIGINT, libc::SIGTERM] {
            // SAFETY: sigaction is plain data; zeroed is a valid starting value.
            let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
            sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
            sa.sa_flags = libc::SA_RESETHAND | libc::SA_RESTART;
            // SAFETY: `sa.sa_mask` is a valid sigset to initialise.
            unsafe { libc::sigemptyset(&mut sa.sa_mask) };
            // SAFETY: as above.
            let mut prev: libc::sigaction = unsafe { std::mem::zeroed() };
            // SAFETY: valid signal number and pointers; the handler only stores to an atomic,
            // which is async-signal-safe.
            if unsafe { libc::sigaction(sig, &sa, &mut prev) } == 0 {
                old.push((sig, prev));
            }
        }
        SignalGuard { old }
    }
}

impl Drop for SignalGuard {
    fn drop(&mut self) {
        for (sig, prev) in &self.old {
            // SAFETY: restoring the disposition sigaction gave us for this signal.
            unsafe { libc::sigaction(*sig, prev, std::ptr::null_mut()) };
        }
    }
}

/// Physically contiguous runs of base pages in `[addr, addr + len)` of
/// this process, from `/proc/self/pagemap`'s frame numbers. `None` where
/// the frame numbers are hidden (they read as 0 without `CAP_SYS_ADMIN`)
/// or a page is not present.
fn pagemap_runs(addr: usize, len: usize) -> Option<u64> {
    use std::io::{Read, Seek, SeekFrom};
    let page = page_size() as usize;
    let first = addr / page;
    let pages = len.div_ceil(page);
    let mut f = std::fs::File::open("/proc/self/pagemap").ok()?;
    f.seek(SeekFrom::Start(first as u64 * 8)).ok()?;
    let mut raw = vec![0u8; pages * 8];
    f.read_exact(&mut raw).ok()?;
    let mut runs = 0u64;
    let mut prev: Option<u64> = None;
    for e in raw.chunks_exact(8) {
        let e = u64::from_ne_bytes(e.try_into().ok()?);
        // Bit 63: present; bits 0-54: the frame number.
        let pfn = e & ((1u64 << 55) - 1);
        if e >> 63 == 0 || pfn == 0 {
            return None;
        }
        if prev != Some(pfn.wrapping_sub(1)) {
            runs += 1;
        }
        prev = Some(pfn);
    }
    Some(runs)
}

/// The physically contiguous runs of a file's page-cache pages over its
/// first `len` bytes: a buffered read's requests are built of them, one
/// segment a run (`page_cache_ra_order`'s large folios where the
/// allocator had them; mm/readahead.c). A shared read-only mapping,
/// populated (`MAP_POPULATE`: the cached pages mapped, nothing copied),
/// read through pagemap. `None` where the mapping fails or the frame
/// numbers are hidden.
pub fn file_cache_runs(f: &std::fs::File, len: u64) -> Option<u64> {
    use std::os::unix::io::AsRawFd;
    let page = page_size() as usize;
    let len = (len as usize) / page * page;
    if len == 0 {
        return None;
    }
    // SAFETY: a new read-only shared mapping of a file we hold open; it is
    // read only through pagemap (no access to its memory) and unmapped
    // before returning.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED | libc::MAP_POPULATE,
            f.as_raw_fd(),
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return None;
    }
    let runs = pagemap_runs(p as usize, len);
    // SAFETY: the mapping made above, of this length.
    unsafe { libc::munmap(p, len) };
    runs
}
