//! Packet filters in tcpdump's syntax, compiled by libpcap into classic BPF.
//!
//! [`BpfProgram::compile`] turns an expression such as `udp port 5000 and not icmp` into
//! classic BPF for a link type and snap length; [`BpfProgram::matches`] runs it in user
//! space (for `replay --include/--exclude`), and [`BpfProgram::attach`] loads it into a
//! socket with `SO_ATTACH_FILTER`, where the kernel also truncates every accepted packet to
//! the snap length (the program's `ret #snaplen`).
//!
//! # Why a hand-written FFI and not the `pcap` crate
//!
//! wirelab needs exactly five libpcap functions (`pcap_open_dead`, `pcap_compile`,
//! `pcap_geterr`, `pcap_freecode`, `pcap_offline_filter`, plus `pcap_close`). The `pcap`
//! crate brings its own capture API, a build script probing for libpcap and more
//! dependencies, while its compile path still goes through a live or dead handle the same
//! way. Six `extern` declarations over a stable C ABI (unchanged since libpcap 1.0) are
//! smaller to audit. The compiled instructions are copied into Rust memory and libpcap's
//! copy is freed at once, so a [`BpfProgram`] owns nothing from C and is `Send + Sync`.
//!
//! Link-time requirement: libpcap (`apt install libpcap-dev` to build, `libpcap0.8` to run).
//!
//! ```no_run
//! use wirelab_io::bpf::BpfProgram;
//! let f = BpfProgram::compile("udp port 5000", 1, 262_144).unwrap();
//! let frame = [0u8; 60];
//! assert!(!f.matches(&frame, 60));
//! assert!(BpfProgram::compile("udp prt 5", 1, 65535).unwrap_err().to_string().contains("syntax error"));
//! ```

use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::sync::Mutex;
use thiserror::Error;

/// One classic BPF instruction (`struct bpf_insn` = `struct sock_filter`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BpfInsn {
    /// Opcode.
    pub code: u16,
    /// Jump offset if true.
    pub jt: u8,
    /// Jump offset if false.
    pub jf: u8,
    /// Generic field.
    pub k: u32,
}

#[repr(C)]
struct bpf_program {
    bf_len: c_uint,
    bf_insns: *mut BpfInsn,
}

#[repr(C)]
struct pcap_pkthdr {
    ts: libc::timeval,
    caplen: u32,
    len: u32,
}

#[repr(C)]
struct sock_fprog {
    len: u16,
    filter: *mut BpfInsn,
}

type PcapT = c_void;

#[link(name = "pcap")]
extern "C" {
    fn pcap_open_dead(linktype: c_int, snaplen: c_int) -> *mut PcapT;
    fn pcap_close(p: *mut PcapT);
    fn pcap_compile(
        p: *mut PcapT,
        fp: *mut bpf_program,
        expr: *const c_char,
        optimize: c_int,
        netmask: u32,
    ) -> c_int;
    fn pcap_geterr(p: *mut PcapT) -> *mut c_char;
    fn pcap_freecode(fp: *mut bpf_program);
    fn pcap_offline_filter(fp: *const bpf_program, h: *const pcap_pkthdr, pkt: *const u8) -> c_int;
}

/// `PCAP_NETMASK_UNKNOWN`: `ip broadcast` then fails to compile instead of guessing.
const NETMASK_UNKNOWN: u32 = 0xffff_ffff;

/// Older libpcap releases kept compiler state in globals; serialize compiles.
static COMPILE_LOCK: Mutex<()> = Mutex::new(());

/// Why a filter could not be compiled or attached.
#[derive(Debug, Error)]
pub enum BpfError {
    /// The expression does not compile; the text is libpcap's.
    #[error("filter {expr:?}: {msg} (see `man 7 pcap-filter` for the syntax)")]
    Syntax { expr: String, msg: String },
    /// The expression contains a NUL byte.
    #[error("filter {expr:?} contains a NUL byte")]
    Nul { expr: String },
    /// libpcap could not create a handle for this link type.
    #[error("libpcap cannot compile for link type {linktype}")]
    LinkType { linktype: i32 },
    /// The program is too long for the kernel.
    #[error("filter {expr:?} compiles to {len} instructions; the kernel accepts at most 4096")]
    TooLong { expr: String, len: usize },
}

/// A compiled classic BPF program, owned in Rust memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BpfProgram {
    expr: String,
    snaplen: u32,
    insns: Vec<BpfInsn>,
}

impl BpfProgram {
    /// Compiles `expr` (tcpdump syntax; empty = accept everything) for `linktype`
    /// (a LINKTYPE_*/DLT_* value, 1 = Ethernet) with `snaplen`, optimized.
    pub fn compile(expr: &str, linktype: i32, snaplen: u32) -> Result<BpfProgram, BpfError> {
        let c_expr = CString::new(expr).map_err(|_| BpfError::Nul { expr: expr.into() })?;
        let snap = c_int::try_from(snaplen.max(1)).unwrap_or(c_int::MAX);
        // LINKTYPE_* equals DLT_* except for the few values remapped in pcap files;
        // LINKTYPE_RAW (101) is DLT_RAW (12 on Linux).
        let dlt = if linktype == 101 { 12 } else { linktype };
        let _guard = COMPILE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: pcap_open_dead only allocates a handle; a null return is checked below.
        let p = unsafe { pcap_open_dead(dlt, snap) };
        if p.is_null() {
            return Err(BpfError::LinkType { linktype });
        }
        let mut prog = bpf_program {
            bf_len: 0,
            bf_insns: std::ptr::null_mut(),
        };
        // SAFETY: `p` is a live handle, `prog` a valid out-parameter, `c_expr` a
        // NUL-terminated string that outlives the call.
        let rc = unsafe { pcap_compile(p, &mut prog, c_expr.as_ptr(), 1, NETMASK_UNKNOWN) };
        let result = if rc != 0 {
            // SAFETY: pcap_geterr returns a NUL-terminated buffer owned by the live handle;
            // it is copied before the handle is closed.
            let msg = unsafe { CStr::from_ptr(pcap_geterr(p)) }
                .to_string_lossy()
                .into_owned();
            Err(BpfError::Syntax {
                expr: expr.into(),
                msg,
            })
        } else {
            let insns = if prog.bf_insns.is_null() || prog.bf_len == 0 {
                Vec::new()
            } else {
                // SAFETY: on success libpcap points `bf_insns` at `bf_len` initialized
                // instructions, which stay valid until pcap_freecode below.
                unsafe { std::slice::from_raw_parts(prog.bf_insns, prog.bf_len as usize) }.to_vec()
            };
            // SAFETY: `prog` was filled by a successful pcap_compile and is freed once.
            unsafe { pcap_freecode(&mut prog) };
            if insns.len() > 4096 {
                Err(BpfError::TooLong {
                    expr: expr.into(),
                    len: insns.len(),
                })
            } else {
                Ok(BpfProgram {
                    expr: expr.into(),
                    snaplen,
                    insns,
                })
            }
        };
        // SAFETY: `p` came from pcap_open_dead and is closed exactly once.
        unsafe { pcap_close(p) };
        result
    }

    /// The expression this program was compiled from.
    pub fn expr(&self) -> &str {
        &self.expr
    }

    /// The snap length compiled into the program's accept returns.
    pub fn snaplen(&self) -> u32 {
        self.snaplen
    }

    /// The instructions.
    pub fn instructions(&self) -> &[BpfInsn] {
        &self.insns
    }

    /// Runs the program over one packet (`pkt` is the captured bytes, `orig_len` the
    /// length on the wire). Loads past `pkt` reject the packet, as in the kernel.
    pub fn matches(&self, pkt: &[u8], orig_len: u32) -> bool {
        if self.insns.is_empty() {
            return false;
        }
        let prog = bpf_program {
            bf_len: self.insns.len() as c_uint,
            bf_insns: self.insns.as_ptr() as *mut BpfInsn,
        };
        let hdr = pcap_pkthdr {
            ts: libc::timeval {
                tv_sec: 0,
                tv_usec: 0,
            },
            caplen: u32::try_from(pkt.len()).unwrap_or(u32::MAX),
            len: orig_len.max(u32::try_from(pkt.len()).unwrap_or(u32::MAX)),
        };
        // SAFETY: `prog` points at our instructions (libpcap only reads them), `hdr` is a
        // valid header whose caplen is exactly `pkt.len()`, so the interpreter's bounds
        // checks keep every load inside `pkt`.
        unsafe { pcap_offline_filter(&prog, &hdr, pkt.as_ptr()) != 0 }
    }

    /// Attaches the program to a socket (`SO_ATTACH_FILTER`); it replaces any earlier one.
    pub fn attach(&self, fd: BorrowedFd<'_>) -> io::Result<()> {
        let fprog = sock_fprog {
            len: self.insns.len() as u16,
            filter: self.insns.as_ptr() as *mut BpfInsn,
        };
        // `fprog` points at our instruction vector, which outlives the call; the kernel
        // copies the program during setsockopt.
        crate::sockopt::set(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_ATTACH_FILTER,
            &fprog,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ethernet + IPv4 + UDP frame from 10.0.0.1:1000 to 10.0.0.2:`dport`.
    fn udp_frame(dport: u16) -> Vec<u8> {
        let mut f = vec![0u8; 14 + 20 + 8 + 4];
        f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
        let ip = &mut f[14..34];
        ip[0] = 0x45;
        ip[2..4].copy_from_slice(&32u16.to_be_bytes());
        ip[8] = 64;
        ip[9] = 17;
        ip[12..16].copy_from_slice(&[10, 0, 0, 1]);
        ip[16..20].copy_from_slice(&[10, 0, 0, 2]);
        let udp = &mut f[34..42];
        udp[0..2].copy_from_slice(&1000u16.to_be_bytes());
        udp[2..4].copy_from_slice(&dport.to_be_bytes());
        udp[4..6].copy_from_slice(&12u16.to_be_bytes());
        f
    }

    #[test]
    fn compiles_and_matches() {
        let f = BpfProgram::compile("udp port 5000", 1, 262_144).unwrap();
        assert!(!f.instructions().is_empty());
        assert!(f.matches(&udp_frame(5000), 46));
        assert!(!f.matches(&udp_frame(5001), 46));
        let g = BpfProgram::compile("not udp", 1, 262_144).unwrap();
        assert!(!g.matches(&udp_frame(5000), 46));
        let h = BpfProgram::compile("src host 10.0.0.1 and dst port 7", 1, 65535).unwrap();
        assert!(h.matches(&udp_frame(7), 46));
    }

    #[test]
    fn empty_accepts_all_and_returns_snaplen() {
        let f = BpfProgram::compile("", 1, 96).unwrap();
        assert!(f.matches(&udp_frame(1), 46));
        assert!(f.matches(&[], 0));
        let last = f.instructions().last().unwrap();
        assert_eq!((last.code, last.k), (0x06, 96)); // BPF_RET|BPF_K #96
    }

    #[test]
    fn syntax_error_names_the_expression() {
        let e = BpfProgram::compile("udp prt 5", 1, 65535).unwrap_err();
        let s = e.to_string();
        assert!(s.starts_with("filter \"udp prt 5\": "), "{s}");
        assert!(s.contains("syntax error"), "{s}");
        assert!(matches!(
            BpfProgram::compile("a\0b", 1, 65535),
            Err(BpfError::Nul { .. })
        ));
    }

    /// A frame cut short is judged on the bytes it has: libpcap's
    /// interpreter rejects a load past the captured length, so `udp port
    /// 5000` (destination port at bytes 36..38) matches only once those
    /// bytes are in. Each cut is a prefix of the whole frame, the rest of
    /// which lies in memory right after it: a caplen above `pkt.len()`
    /// (reading out of bounds) would find the port there and match, and
    /// fail this without a sanitizer.
    #[test]
    fn truncated_packets_are_judged_on_their_captured_bytes_only() {
        let f = BpfProgram::compile("udp port 5000", 1, 65535).unwrap();
        let frame = udp_frame(5000);
        for n in 0..=frame.len() {
            assert_eq!(f.matches(&frame[..n], 46), n >= 38, "{n} of 46 bytes");
        }
    }

    #[test]
    fn raw_ip_linktype() {
        let f = BpfProgram::compile("udp", 101, 65535).unwrap();
        assert!(f.matches(&udp_frame(9)[14..], 32));
    }

    #[test]
    fn compiles_from_many_threads() {
        let hs: Vec<_> = (0..4)
            .map(|i| {
                std::thread::spawn(move || {
                    for j in 0..50 {
                        let e = format!("udp port {}", 1000 + i * 100 + j);
                        BpfProgram::compile(&e, 1, 65535).unwrap();
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
    }
}
